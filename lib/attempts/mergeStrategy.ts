/** How an attempt's branch is merged into its base branch: fast-forward only, a merge commit, or one squashed commit. */
export const MERGE_STRATEGIES = ['ff', 'no-ff', 'squash'] as const;
export type MergeStrategy = (typeof MERGE_STRATEGIES)[number];
