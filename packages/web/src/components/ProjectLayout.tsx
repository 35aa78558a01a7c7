import { useEffect, useId, useRef, useState, type KeyboardEvent } from 'react';
import { Link, Outlet, useLocation, useParams } from 'react-router';
import { useProject } from '../api/queries';
import { QueryState } from './States';

interface Section {
  /** The path under the project ('' is the flags overview); pages below it (a flag, an experiment) belong to it. */
  to: string;
  label: string;
  /** Webhooks hold signing secrets: only owners see that link. */
  owner?: boolean;
}

/**
 * A project's sections, grouped the way people look for them. Thirteen in one row wrapped onto two
 * lines at 1,280 px; grouped in a sidebar they all stay in sight, and on a phone they fold behind
 * one button that names the section shown. API tokens are per user (the header's "API tokens").
 */
export const SECTION_GROUPS: { label: string; sections: Section[] }[] = [
  {
    label: 'Flags and targeting',
    sections: [
      { to: '', label: 'Flags' },
      { to: 'segments', label: 'Segments' },
      { to: 'try', label: 'Try it' },
      { to: 'usage', label: 'Usage' },
    ],
  },
  {
    label: 'Experiments',
    sections: [
      { to: 'experiments', label: 'Experiments' },
      { to: 'metrics', label: 'Metrics' },
    ],
  },
  {
    label: 'Changes and audit',
    sections: [
      { to: 'change-requests', label: 'Change requests' },
      { to: 'audit', label: 'Audit log' },
    ],
  },
  {
    label: 'Setup',
    sections: [
      { to: 'environments', label: 'Environments' },
      { to: 'members', label: 'Members' },
      { to: 'connect', label: 'Connect an app' },
      { to: 'webhooks', label: 'Webhooks', owner: true },
      { to: 'settings', label: 'Settings' },
    ],
  },
];

/** The section a path under the project belongs to: its first segment ('flags/…' is the flags overview's). */
export function currentSection(pathname: string, projectId: string): string {
  const rest = pathname.slice(`/projects/${projectId}`.length).replace(/^\/+/, '');
  const first = rest.split('/')[0] ?? '';
  return first === 'flags' ? '' : first;
}

export function ProjectLayout() {
  const { projectId = '' } = useParams();
  const project = useProject(projectId);
  const { pathname } = useLocation();
  const current = currentSection(pathname, projectId);
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
          <div className="project-layout">
            <ProjectNav projectId={projectId} current={current} isOwner={data.role === 'owner'} />
            <div className="project-content">
              <Outlet />
            </div>
          </div>
        </>
      )}
    </QueryState>
  );
}

/**
 * One landmark, "Project sections", with a labelled list per group; the link of the section shown
 * has aria-current="page". Below 900 px the lists fold behind a disclosure button (aria-expanded)
 * that shows the current section; choosing a link or pressing Escape folds them again.
 */
function ProjectNav({ projectId, current, isOwner }: { projectId: string; current: string; isOwner: boolean }) {
  const id = useId();
  const [open, setOpen] = useState(false);
  const toggle = useRef<HTMLButtonElement>(null);
  const groups = SECTION_GROUPS.map((group) => ({ ...group, sections: group.sections.filter((section) => !section.owner || isOwner) }));
  const currentLabel = groups.flatMap((group) => group.sections).find((section) => section.to === current)?.label ?? 'Sections';
  // A new page: the folded menu closes behind it.
  useEffect(() => setOpen(false), [current]);
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key !== 'Escape' || !open) return;
    setOpen(false);
    toggle.current?.focus();
  };
  return (
    <nav className="project-nav" aria-label="Project sections" onKeyDown={onKeyDown}>
      <button ref={toggle} type="button" className="nav-toggle secondary" aria-expanded={open} aria-controls={`${id}-groups`} onClick={() => setOpen(!open)}>
        <svg viewBox="0 0 16 16" width="16" height="16" aria-hidden="true">
          <path d="M2 4h12M2 8h12M2 12h12" stroke="currentColor" strokeWidth="2" strokeLinecap="round" />
        </svg>
        <span className="visually-hidden">Sections, showing </span>
        {currentLabel}
      </button>
      <div id={`${id}-groups`} className={open ? 'nav-groups open' : 'nav-groups'}>
        {groups.map((group, index) => (
          <div key={group.label} className="nav-group">
            <p className="nav-group-label" id={`${id}-${index}`}>
              {group.label}
            </p>
            <ul aria-labelledby={`${id}-${index}`}>
              {group.sections.map((section) => (
                <li key={section.to}>
                  <Link
                    to={`/projects/${projectId}${section.to ? `/${section.to}` : ''}`}
                    className="nav-link"
                    aria-current={section.to === current ? 'page' : undefined}
                    onClick={() => setOpen(false)}
                  >
                    {section.label}
                  </Link>
                </li>
              ))}
            </ul>
          </div>
        ))}
      </div>
    </nav>
  );
}
