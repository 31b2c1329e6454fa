/** A screen that is not built yet: its title and one sentence. */
export function Placeholder({ title, text }: { title: string; text: string }) {
  return (
    <section>
      <h1>{title}</h1>
      <p className="muted">{text}</p>
    </section>
  );
}
