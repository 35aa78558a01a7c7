// The login token lives in localStorage so a reload keeps the session. The page's CSP allows
// scripts from this origin only, so no third-party script can read it.
const KEY = 'guidon.token';
/** 'oidc' when the session came from the OpenID provider: log out then ends the provider's session too. */
const VIA = 'guidon.via';
const listeners = new Set<() => void>();

export const session = {
  token: (): string | null => localStorage.getItem(KEY),
  via: (): 'oidc' | 'password' => (localStorage.getItem(VIA) === 'oidc' ? 'oidc' : 'password'),
  signIn(token: string, via: 'oidc' | 'password' = 'password') {
    localStorage.setItem(KEY, token);
    localStorage.setItem(VIA, via);
    listeners.forEach((listener) => listener());
  },
  signOut() {
    localStorage.removeItem(KEY);
    localStorage.removeItem(VIA);
    listeners.forEach((listener) => listener());
  },
  subscribe(listener: () => void) {
    listeners.add(listener);
    return () => void listeners.delete(listener);
  },
};
