/* global window, document, location, URLSearchParams */
// The guide's test page: the real bubble of the widget named in the address, with the embed tag's
// script from this service, as a customer's website would load it.
const widgetId = new URLSearchParams(location.search).get('widget');
if (widgetId && /^wgt_[\w-]+$/.test(widgetId)) {
  const script = document.createElement('script');
  script.src = '/widget.js';
  script.async = true;
  script.dataset.widgetId = widgetId;
  script.addEventListener('load', () => window.ChatWidget?.open());
  document.body.append(script);
} else {
  const problem = document.getElementById('problem');
  problem.textContent = 'This address names no widget.';
  problem.hidden = false;
}
