import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createBrowserRouter, RouterProvider } from 'react-router';
import { ApiError, isUnavailable, onReconnected, retryWhileUnavailable } from './api';
import { showError } from './components';
import { routes } from './routes';
import './styles.css';

// Errors are shown, never swallowed: a failed query or mutation toasts unless the screen shows it inline
// (meta.inlineError). A 401 opens the key prompt instead (api/client.ts).
const unauthorized = (err: unknown) => err instanceof ApiError && err.status === 401;
// a read that found its service down is read again every few seconds (below): its toast is shown once, not at each try
const toldUnavailable = new WeakSet<object>();
const queryClient = new QueryClient({
  queryCache: new QueryCache({
    onError: (err, query) => {
      if (unauthorized(err) || query.meta?.inlineError) return;
      if (isUnavailable(err)) {
        if (toldUnavailable.has(query)) return;
        toldUnavailable.add(query);
      }
      showError(err);
    },
    onSuccess: (_data, query) => void toldUnavailable.delete(query),
  }),
  mutationCache: new MutationCache({
    // a mutation marked meta.inlineError shows its error in its dialog (a toast would sit under the modal's backdrop)
    onError: (err, _vars, _ctx, mutation) => {
      // an action: a service down is named, and the toast says it is not sent again by itself (a read's says it is)
      if (!unauthorized(err) && !mutation.meta?.inlineError) showError(err, { action: true });
    },
  }),
  defaultOptions: {
    queries: {
      // live updates come from the streams: no refetch on focus, no polling
      refetchOnWindowFocus: false,
      // except for a read that found its service down (503, no answer): again every 5 s until it loads (api/unavailable.ts)
      refetchInterval: retryWhileUnavailable,
      staleTime: 30_000,
      retry: (count, err) => !(err instanceof ApiError && err.status >= 400 && err.status < 500) && count < 2,
    },
  },
});

// A screen whose load failed while the service or its database was down (its error and Retry shown) loads again by
// itself once the live streams are back: only the queries in error, so nothing else is fetched twice.
onReconnected(() => void queryClient.refetchQueries({ type: 'active', predicate: (q) => q.state.status === 'error' }));

const router = createBrowserRouter(routes);
const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root');
createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
