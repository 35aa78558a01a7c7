import { NavLink, Outlet, useParams } from 'react-router';
import { useProject } from '../api/queries';
import { QueryState } from './States';

/**
 * A project's sections. Members, API tokens, audit log and webhooks (issue 10) join this list
 * when their pages exist.
 */
const SECTIONS = [
  { to: '', label: 'Flags', end: true },
  { to: 'environments', label: 'Environments' },
  { to: 'try', label: 'Try it' },
  { to: 'usage', label: 'Usage' },
  { to: 'connect', label: 'Connect an app' },
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
          </div>
          <nav className="tabs" aria-label="Project sections">
            {SECTIONS.map((section) => (
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
