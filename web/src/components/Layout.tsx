import { Link, NavLink, Outlet, useLocation } from 'react-router';
import { ConnectionBanner } from './ConnectionBanner';
import { KeyPrompt } from './KeyPrompt';
import { Toasts } from './Toasts';

/** `also`: other addresses under the same entry (a task's screen is part of its project: no entry was marked there). */
const NAV: { to: string; label: string; also?: string }[] = [
  { to: '/projects', label: 'Projects', also: '/tasks/' },
  { to: '/approvals', label: 'Approvals' },
  { to: '/scheduler', label: 'Scheduler' },
  { to: '/agents', label: 'Agents' },
  { to: '/traces', label: 'Traces' },
  { to: '/settings', label: 'Settings' },
];

/**
 * The page frame: a skip link, navigation, connection banner, the routed screen, toasts and the key prompt. The skip
 * link is the first thing Tab reaches (hidden until focused): it moves focus to the screen, past the seven links above
 * it. The brand is a router link like the others (it reloaded the whole page).
 */
export function Layout() {
  const { pathname } = useLocation();
  return (
    <div className="app">
      {/* biome-ignore lint/a11y/useValidAnchor: a skip link is a link to #main (what assistive tech expects); the click only keeps #main out of the router's URL */}
      <a
        className="skip-link"
        href="#main"
        onClick={(e) => {
          // focus, not the address: a #main in the URL would be a navigation of the router
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header className="topbar">
        <Link className="brand" to="/projects">
          Armada
        </Link>
        <nav aria-label="Main">
          <ul>
            {NAV.map((n) => (
              <li key={n.to}>
                <NavLink to={n.to} className={({ isActive }) => (isActive || (n.also && pathname.startsWith(n.also)) ? 'active' : undefined)}>
                  {n.label}
                </NavLink>
              </li>
            ))}
          </ul>
        </nav>
      </header>
      <ConnectionBanner />
      <main className="main" id="main" tabIndex={-1}>
        <Outlet />
      </main>
      <Toasts />
      <KeyPrompt />
    </div>
  );
}
