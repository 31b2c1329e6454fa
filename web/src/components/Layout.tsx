import { NavLink, Outlet } from 'react-router';
import { ConnectionBanner } from './ConnectionBanner';
import { KeyPrompt } from './KeyPrompt';
import { Toasts } from './Toasts';

const NAV = [
  { to: '/projects', label: 'Projects' },
  { to: '/approvals', label: 'Approvals' },
  { to: '/scheduler', label: 'Scheduler' },
  { to: '/agents', label: 'Agents' },
  { to: '/traces', label: 'Traces' },
  { to: '/settings', label: 'Settings' },
];

/** The page frame: navigation, connection banner, the routed screen, toasts and the key prompt. */
export function Layout() {
  return (
    <div className="app">
      <header className="topbar">
        <a className="brand" href="/projects">
          Armada
        </a>
        <nav aria-label="Main">
          <ul>
            {NAV.map((n) => (
              <li key={n.to}>
                <NavLink to={n.to}>{n.label}</NavLink>
              </li>
            ))}
          </ul>
        </nav>
      </header>
      <ConnectionBanner />
      <main className="main">
        <Outlet />
      </main>
      <Toasts />
      <KeyPrompt />
    </div>
  );
}
