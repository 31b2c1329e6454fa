import { useEffect, useState } from 'react';

/**
 * Whether an element's content is larger than its box, so that it scrolls (a table wider than a phone's window, the
 * log's Sources row with more sources than fit), followed as the box or what it holds changes. The callback goes in
 * the element's `ref`. Such a box holding nothing focusable could not be scrolled from the keyboard (WCAG 2.1.1, axe's
 * scrollable-region-focusable): the boxes that use this take Tab while they scroll (`tabIndex={0}`, named), and
 * only then, so a box that fits adds no stop to the Tab order.
 */
export function useScrolls<T extends HTMLElement>(): [(el: T | null) => void, boolean] {
  const [el, setEl] = useState<T | null>(null);
  const [scrolls, setScrolls] = useState(false);
  useEffect(() => {
    if (!el) return;
    const check = () => setScrolls(el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1);
    const resized = new ResizeObserver(check);
    const watch = () => {
      resized.disconnect();
      resized.observe(el);
      for (const child of el.children) resized.observe(child);
    };
    // rows or sources added: the content grows inside a box of the same size
    const changed = new MutationObserver(() => {
      watch();
      check();
    });
    watch();
    changed.observe(el, { childList: true, subtree: true, characterData: true });
    check();
    return () => {
      resized.disconnect();
      changed.disconnect();
    };
  }, [el]);
  return [setEl, scrolls];
}
