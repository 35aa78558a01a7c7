import type { Role } from '../api/roles';

/** Says once, at the top of a page, why its controls are disabled for the caller's role. */
export function RoleNote({ need, what }: { need: Role; what: string }) {
  return (
    <p className="notice role-note" id={`role-note-${need}`}>
      {need === 'owner' ? `Only an owner can ${what}.` : `You are a viewer in this project: you can look, but not ${what}. Ask an owner for the editor role.`}
    </p>
  );
}
