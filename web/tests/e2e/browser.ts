// Debian's Chromium driven by playwright-core (no browser download): headless, no sandbox
// (containers and CI run as root), no background networking (loopback only).

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { SCREENSHOT_DIR } from './daemon';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-dev-shm-usage'],
  });
}

// A page at 1280 x 800 (or the given size) that records console errors and page crashes.
export async function newPage(browser: Browser, width = 1280, height = 800): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width, height } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  return { page, errors };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.evaluate(() => window.scrollTo(0, 0)); // else the sticky top bar lands mid-page
  await page.screenshot({ path, fullPage: true });
  return path;
}
