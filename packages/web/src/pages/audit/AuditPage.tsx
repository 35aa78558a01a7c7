import { useState } from 'react';
import { useParams } from 'react-router';
import type { ResourceType } from '../../api/client';
import { useMembers } from '../../api/queries';
import { AuditList, type AuditFilters } from './AuditList';

const TYPES: { value: ResourceType; label: string }[] = [
  { value: 'flag', label: 'Flags' },
  { value: 'rule', label: 'Targeting rules' },
  { value: 'environment', label: 'Environments' },
  { value: 'project', label: 'Project' },
  { value: 'member', label: 'Members' },
  { value: 'webhook', label: 'Webhooks' },
  { value: 'release', label: 'Guarded releases' },
];

/** Every change in the project: who, when, and what it was before and after (docs/api.md). */
export function AuditPage() {
  const { projectId = '' } = useParams();
  const members = useMembers(projectId);
  const [filters, setFilters] = useState<AuditFilters>({});
  const people = (members.data ?? []).filter((member) => member.user_id !== null);
  return (
    <section className="panel">
      <h2>Audit log</h2>
      <p className="muted">Every change to this project, newest first. Evaluations are not listed here (see Usage).</p>
      <div className="toolbar">
        <div className="field">
          <label htmlFor="audit-type">Resource type</label>
          <select id="audit-type" value={filters.resource_type ?? ''} onChange={(event) => setFilters({ ...filters, resource_type: (event.target.value || undefined) as AuditFilters['resource_type'] })}>
            <option value="">All</option>
            {TYPES.map((type) => (
              <option key={type.value} value={type.value}>
                {type.label}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="audit-actor">Changed by</label>
          <select id="audit-actor" value={filters.actor_id ?? ''} onChange={(event) => setFilters({ ...filters, actor_id: event.target.value || undefined })}>
            <option value="">Anyone</option>
            {people.map((member) => (
              <option key={member.id} value={member.user_id ?? ''}>
                {member.email}
              </option>
            ))}
          </select>
        </div>
      </div>
      <AuditList projectId={projectId} filters={filters} emptyText={filters.resource_type || filters.actor_id ? 'No change matches these filters.' : 'Changes to flags, rules, environments, members and webhooks appear here.'} />
    </section>
  );
}
