// The login token lives in localStorage so a reload keeps the session. The page's CSP allows
// scripts from this origin only, so no third-party script can read it.
const KEY = 'guidon.token';
const listeners = new Set<() => void>();

export const session = {
  token: (): string | null => localStorage.getItem(KEY),
  signIn(token: string) {
    localStorage.setItem(KEY, token);
    listeners.forEach((listener) => listener());
  },
  signOut() {
    localStorage.removeItem(KEY);
    listeners.forEach((listener) => listener());
  },
  subscribe(listener: () => void) {
    listeners.add(listener);
    return () => void listeners.delete(listener);
  },
};
