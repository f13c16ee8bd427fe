// The console's API calls and session: the account's secret, kept in this tab's sessionStorage
// only, sent as the bearer of every call.

import { $ } from './dom.js';

export const SECRET_KEY = 'toolsmith.console.secret';
export const session = { secret: sessionStorage.getItem(SECRET_KEY), account: null };

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** A JSON API call under /console/api with the account's bearer secret. A 401 signs out. */
export async function api(path, { method = 'GET', body, signal } = {}) {
  const headers = { Authorization: `Bearer ${session.secret}`, Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(`/console/api${path}`, {
    method, headers, signal, cache: 'no-store',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try {
    data = await response.json();
  } catch {
    // An empty or non-JSON body: described by the status alone.
  }
  if (response.status === 401) {
    signOut('The secret was not accepted.');
    throw new ApiError(401, 'The secret was not accepted.');
  }
  if (!response.ok) {
    const text = data && typeof data.error === 'string' ? data.error : `${response.status} ${response.statusText}`;
    throw new ApiError(response.status, text);
  }
  return data;
}

export function showAlert(text) {
  $('alert').textContent = text || '';
}

/** Reports an error of a view's work (not one caused by leaving the view). */
export function failed(error, ctx) {
  if (ctx?.signal.aborted || error.name === 'AbortError' || error.status === 401) return;
  showAlert(error instanceof ApiError ? error.message : `Cannot reach the service: ${error.message}`);
}

/** What signing out shows: set by the page (the sign-in view), so that this module needs none. */
let signedOut = () => {};

export function onSignOut(show) {
  signedOut = show;
}

export function signOut(message) {
  sessionStorage.removeItem(SECRET_KEY);
  session.secret = null;
  session.account = null;
  signedOut(message);
}
