// The names the documentation's examples use without declaring them (a block continues the one before).
import type { AuthManager, SyncSession } from "session-broker";

declare global {
  var auth: AuthManager;
  var sync: SyncSession;
  function showWrongPassword(): void;
  function hideTheButton(): void;
  function render(userId: string, roles: string[]): void;
  function renderSignedOut(reason: string, otherTab: boolean): void;
}
