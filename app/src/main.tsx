import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router';
import { Providers } from './app/providers.tsx';
import { AppRoutes } from './app/routes.tsx';
import './styles.css';

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <Providers>
      <BrowserRouter basename="/app">
        <AppRoutes />
      </BrowserRouter>
    </Providers>
  </StrictMode>,
);
