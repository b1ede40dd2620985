// Screenshots the browser tests take: every one into artifacts/screenshots (CI keeps it as an artifact);
// those the README shows also into docs/screenshots when SCREENSHOTS_DOCS=1, so a run meant to refresh
// the committed pictures writes them and an everyday run leaves the working tree alone.
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';

export const SCREENSHOTS = join(import.meta.dirname, '..', '..', 'artifacts', 'screenshots');
export const DOCS_SCREENSHOTS = join(import.meta.dirname, '..', '..', 'docs', 'screenshots');
export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

/** Two frames drawn: what a resize or a change just did is on screen (a wait for the page, not a clock). */
const painted = (page: Page) =>
  page.evaluate(() => new Promise<void>((resolve) => (globalThis as any).requestAnimationFrame(() => (globalThis as any).requestAnimationFrame(() => resolve()))));

/** `name`.png into artifacts/screenshots, and into docs/screenshots too when `docs` and SCREENSHOTS_DOCS=1. */
export async function shoot(page: Page, name: string, options: { docs?: boolean; fullPage?: boolean } = {}): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await painted(page);
  await page.screenshot({ path, fullPage: options.fullPage ?? false });
  if (options.docs && process.env.SCREENSHOTS_DOCS === '1') {
    await mkdir(DOCS_SCREENSHOTS, { recursive: true });
    await copyFile(path, join(DOCS_SCREENSHOTS, `${name}.png`));
  }
}

/** The screen as it is at desktop size, then at phone size (`name`-desktop, `name`-phone); the page goes back to its size after. */
export async function shootBoth(page: Page, name: string, options: { docs?: boolean } = {}): Promise<void> {
  const size = page.viewportSize() ?? DESKTOP;
  await page.setViewportSize(DESKTOP);
  await shoot(page, `${name}-desktop`, options);
  await page.setViewportSize(PHONE);
  await shoot(page, `${name}-phone`, options);
  await page.setViewportSize(size);
  await painted(page);
}
