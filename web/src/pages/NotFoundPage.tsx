import { Link } from 'react-router';

export function NotFoundPage() {
  return (
    <section>
      <h1>Not found</h1>
      <p>
        There is no screen at this address. <Link to="/projects">Go to the projects</Link>.
      </p>
    </section>
  );
}
