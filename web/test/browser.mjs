// Debian's Chromium (/usr/bin/chromium) driven by playwright-core: never a downloaded browser.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CHROMIUM = process.env.MEMEST_CHROMIUM ?? '/usr/bin/chromium';

/** Launches headless Chromium with a fresh profile; close() removes the profile. */
export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), 'memest-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-quic', '--no-first-run'],
    viewport: { width: 1360, height: 900 },
    acceptDownloads: true,
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
