import { useEffect } from 'react';

/** The tab's title follows the screen ("My project · Armada"); back to "Armada" when the screen is left. */
export function useDocumentTitle(title: string | null): void {
  useEffect(() => {
    document.title = title ? `${title} · Armada` : 'Armada';
    return () => {
      document.title = 'Armada';
    };
  }, [title]);
}
