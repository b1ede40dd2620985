// Inside the shadow root: the host page's selectors cannot reach these elements. `all: initial !important`
// on the host also cuts off what would still cross the boundary (inherited font, colour, line height, a
// transform on every element), since an !important rule of the shadow tree beats the page's own.
export const CSS = `
:host { all: initial !important; }
.root {
  --accent: #3355ff;
  --on-accent: #ffffff;
  position: fixed; bottom: 20px; right: 20px; z-index: 2147483647;
  font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f;
  -webkit-font-smoothing: antialiased; text-align: left; direction: ltr;
}
.root.left { right: auto; left: 20px; }
*, *::before, *::after { box-sizing: border-box; }
button, textarea, input { font: inherit; color: inherit; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
:focus-visible { outline: 3px solid #111; outline-offset: 2px; }
.bubble {
  position: relative; width: 60px; height: 60px; border-radius: 50%; border: 0; cursor: pointer;
  background: var(--accent); color: var(--on-accent); box-shadow: 0 4px 16px rgba(0,0,0,.25);
  display: flex; align-items: center; justify-content: center; padding: 0; margin: 0;
}
.bubble svg { width: 28px; height: 28px; fill: currentColor; }
.badge {
  position: absolute; top: -4px; right: -4px; min-width: 22px; height: 22px; padding: 0 6px; border-radius: 11px;
  background: #d92d20; color: #fff; font-size: 12px; font-weight: 700; line-height: 22px; text-align: center;
}
.panel {
  position: absolute; bottom: 76px; right: 0; width: 360px; height: min(560px, calc(100vh - 110px));
  display: flex; flex-direction: column; background: #fff; border-radius: 14px; overflow: hidden;
  box-shadow: 0 12px 40px rgba(0,0,0,.28);
}
.left .panel { right: auto; left: 0; }
[hidden] { display: none !important; }
.head { background: var(--accent); color: var(--on-accent); padding: 14px 16px; display: flex; align-items: flex-start; gap: 8px; }
.head h2 { margin: 0; font-size: 17px; font-weight: 700; flex: 1; }
.head p { margin: 4px 0 0; font-size: 14px; opacity: .95; white-space: pre-wrap; }
.head .titles { flex: 1; }
.close { background: transparent; border: 0; color: inherit; font-size: 26px; line-height: 1; cursor: pointer; padding: 0 4px; }
.status { background: #fff4e5; color: #6b3d00; font-size: 13px; padding: 6px 16px; }
.alert { background: #fdecea; color: #8a1c13; font-size: 14px; padding: 8px 16px; }
.notice { background: #eef2ff; color: #1e2a78; font-size: 14px; padding: 8px 16px; white-space: pre-wrap; }
.log { flex: 1; overflow-y: auto; list-style: none; margin: 0; padding: 12px; display: flex; flex-direction: column; gap: 8px; background: #f6f7f9; }
.msg { max-width: 82%; padding: 8px 12px; border-radius: 14px; white-space: pre-wrap; overflow-wrap: anywhere; }
.msg.visitor { align-self: flex-end; background: var(--accent); color: var(--on-accent); border-bottom-right-radius: 4px; }
.msg.team { align-self: flex-start; background: #fff; border: 1px solid #e3e5e8; border-bottom-left-radius: 4px; }
.msg.system { align-self: center; background: transparent; color: #5f6368; font-size: 13px; text-align: center; }
.msg .file svg, .attach svg { width: 16px; height: 16px; vertical-align: -3px; margin-right: 4px; }
.attach svg { width: 20px; height: 20px; margin: 0; }
.msg .file { display: block; margin-top: 6px; background: rgba(0,0,0,.08); border: 0; border-radius: 8px; padding: 4px 8px; cursor: pointer; text-align: left; color: inherit; text-decoration: underline; }
.typing { font-size: 13px; color: #5f6368; padding: 2px 16px 6px; background: #f6f7f9; }
.survey, .ended { padding: 12px 16px; border-top: 1px solid #e3e5e8; }
.survey fieldset { border: 0; margin: 0; padding: 0; }
.survey legend { font-weight: 700; margin-bottom: 6px; padding: 0; }
.stars { display: flex; gap: 4px; }
.stars label { cursor: pointer; }
.stars input { position: absolute; opacity: 0; width: 1px; height: 1px; }
.stars span { display: inline-block; min-width: 40px; padding: 6px 0; text-align: center; border: 1px solid #c9ccd1; border-radius: 8px; background: #fff; }
.stars input:checked + span { background: var(--accent); color: var(--on-accent); border-color: var(--accent); }
.stars input:focus-visible + span { outline: 3px solid #111; outline-offset: 2px; }
.survey textarea { width: 100%; margin: 8px 0; min-height: 44px; border: 1px solid #c9ccd1; border-radius: 8px; padding: 6px 8px; resize: vertical; }
.primary { background: var(--accent); color: var(--on-accent); border: 0; border-radius: 8px; padding: 8px 14px; cursor: pointer; font-weight: 600; }
.primary:disabled { opacity: .6; cursor: default; }
.composer { display: flex; align-items: flex-end; gap: 6px; padding: 10px; border-top: 1px solid #e3e5e8; background: #fff; }
.composer textarea { flex: 1; resize: none; height: 44px; max-height: 120px; border: 1px solid #c9ccd1; border-radius: 10px; padding: 10px; }
.attach { display: inline-flex; align-items: center; justify-content: center; width: 40px; height: 44px; border-radius: 10px; cursor: pointer; border: 1px solid #c9ccd1; background: #fff; }
.attach input { position: absolute; opacity: 0; width: 1px; height: 1px; }
.attach:focus-within { outline: 3px solid #111; outline-offset: 2px; }
.chips { display: flex; flex-wrap: wrap; gap: 6px; padding: 0 10px 8px; background: #fff; }
.chip { font-size: 13px; background: #eef0f3; border-radius: 12px; padding: 3px 4px 3px 10px; display: inline-flex; align-items: center; gap: 4px; }
.chip button { border: 0; background: transparent; cursor: pointer; font-size: 16px; line-height: 1; padding: 0 4px; }
@media (max-width: 480px) {
  .root { bottom: 16px; right: 16px; }
  .root.left { left: 16px; }
  .root.is-open .bubble { display: none; }
  .panel { position: fixed; inset: 0; width: 100vw; height: 100%; border-radius: 0; }
}
`;
