import { useEffect, useState } from 'react';
import { useAnswerInvitation } from '../../api/members';
import { useInvitations } from '../../api/queries';
import { Outcome } from '../../components/FormError';
import { ago } from '../../components/time';

/**
 * The invitations waiting for the signed-in person (nobody joins a project without accepting): who
 * sent each, for which project and role, with Accept and Decline. Shown only while there are any;
 * what happened (a status, or the refusal's alert) stays after the last one goes.
 */
export function Invitations({ focusAfterLast }: { focusAfterLast: string }) {
  const invitations = useInvitations();
  const answer = useAnswerInvitation();
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  // The answered row goes with its buttons: the focus moves to the Accept of the row in its place, else to the page's heading.
  const [answeredAt, setAnsweredAt] = useState<number | null>(null);
  const list = invitations.data ?? [];
  useEffect(() => {
    if (answeredAt === null) return;
    const next = list[Math.min(answeredAt, list.length - 1)];
    document.getElementById(next ? `accept-${next.id}` : focusAfterLast)?.focus();
    setAnsweredAt(null);
  }, [answeredAt, list, focusAfterLast]);

  const respond = async (index: number, accept: boolean) => {
    const invitation = list[index]!;
    setOutcome(null);
    setBusy(invitation.id);
    try {
      await answer.mutateAsync({ id: invitation.id, accept });
      setOutcome({ ok: true, text: accept ? `You joined ${invitation.project.name} as ${invitation.role}.` : `You declined the invitation to ${invitation.project.name}.` });
      setAnsweredAt(index); // the list was read again before the answer resolved
    } catch (caught) {
      setOutcome({ ok: false, text: `${invitation.project.name}: ${(caught as Error).message}` });
    } finally {
      setBusy(null);
    }
  };

  return (
    <>
      <Outcome message={outcome} />
      {list.length > 0 && (
        <section className="panel invitations" aria-labelledby="invitations-title">
          <h2 id="invitations-title">Invitations</h2>
          <p className="muted">Each one joins you to a project of someone else. Accept only the ones you expected: decline the others, and their project never appears here.</p>
          <ul className="rows" aria-label="Invitations waiting for your answer">
            {list.map((invitation, index) => (
              <li key={invitation.id} className="row invitation">
                <div>
                  <strong>{invitation.project.name}</strong>
                  <span className="badge role">{invitation.role}</span>
                  <p className="muted small">
                    Invited by {invitation.invited_by.email} {ago(invitation.created_at)}
                  </p>
                </div>
                <div className="row-actions">
                  <button type="button" id={`accept-${invitation.id}`} className="small" disabled={busy !== null} onClick={() => void respond(index, true)} aria-label={`Accept the invitation to ${invitation.project.name}`}>
                    Accept
                  </button>
                  <button type="button" className="secondary small" disabled={busy !== null} onClick={() => void respond(index, false)} aria-label={`Decline the invitation to ${invitation.project.name}`}>
                    Decline
                  </button>
                </div>
              </li>
            ))}
          </ul>
        </section>
      )}
    </>
  );
}
