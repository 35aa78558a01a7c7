import { NavLink, Outlet, useParams } from 'react-router';
import { useProject } from '../api/queries';
import { QueryState } from './States';

/** A project's sections. Webhooks hold signing secrets: only owners see that tab. API tokens are per user (the header's "API tokens"). */
const SECTIONS = [
  { to: '', label: 'Flags', end: true },
  { to: 'segments', label: 'Segments' },
  { to: 'environments', label: 'Environments' },
  { to: 'change-requests', label: 'Change requests' },
  { to: 'try', label: 'Try it' },
  { to: 'usage', label: 'Usage' },
  { to: 'connect', label: 'Connect an app' },
  { to: 'members', label: 'Members' },
  { to: 'audit', label: 'Audit log' },
  { to: 'webhooks', label: 'Webhooks', owner: true },
  { to: 'settings', label: 'Settings' },
] as const;

export function ProjectLayout() {
  const { projectId = '' } = useParams();
  const project = useProject(projectId);
  return (
    <QueryState query={project} what="the project">
      {(data) => (
        <>
          <div className="project-head">
            <p className="eyebrow">Project</p>
            <h1>{data.name}</h1>
            <span className="badge role" title="Your role in this project">
              {data.role}
            </span>
          </div>
          <nav className="tabs" aria-label="Project sections">
            {SECTIONS.filter((section) => !('owner' in section) || data.role === 'owner').map((section) => (
              <NavLink key={section.to} to={section.to} end={'end' in section} className={({ isActive }) => (isActive ? 'tab active' : 'tab')}>
                {section.label}
              </NavLink>
            ))}
          </nav>
          <Outlet />
        </>
      )}
    </QueryState>
  );
}
