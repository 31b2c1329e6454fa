/** A merge approval gates the merge: pending or rejected → 409 and the base branch untouched; approved → merged. */
import { eventually } from '../support/harness';
import { attemptStackForFile, gitOut } from '../support/attemptHelpers';

const h = attemptStackForFile();

async function requestApproval(attemptId: string) {
  const r = await h.inject('POST', '/api/approvals', { taskAttemptId: attemptId, type: 'merge', title: 'Ship it?', approvers: ['lead@example.com'] }, { 'x-user-email': 'dev@example.com' });
  expect(r.statusCode).toBeLessThan(300);
  return r.json().data.id as string;
}

test('a pending merge approval refuses the merge (409); once approved the merge lands', async () => {
  const { repo, attemptId } = await h.finishedAttempt('Edit under approval');
  const before = gitOut(repo, 'rev-parse', 'main');
  const approvalId = await requestApproval(attemptId);
  const refused = await h.inject('POST', `/api/attempts/${attemptId}/merge`, {});
  expect(refused.statusCode).toBe(409);
  expect(refused.json().error).toMatchObject({ code: 'CONFLICT', details: { approvalId, approvalStatus: 'pending' } });
  expect(gitOut(repo, 'rev-parse', 'main')).toBe(before);

  const ok = await h.inject('POST', `/api/approvals/${approvalId}/respond`, { decision: 'approved' }, { 'x-user-email': 'lead@example.com' });
  expect(ok.json().data.approvalStatus).toBe('approved');
  await eventually(async () => (await h.inject('GET', `/api/approvals/${approvalId}`)).json().data.status === 'approved');
  const merged = await h.inject('POST', `/api/attempts/${attemptId}/merge`, {});
  expect(merged.statusCode).toBe(200);
  expect(merged.json().data.merged).toBe(true);
  expect(gitOut(repo, 'rev-parse', 'main')).not.toBe(before);
});

test('a rejected merge approval keeps refusing the merge', async () => {
  const { repo, attemptId } = await h.finishedAttempt('Edit under approval');
  const before = gitOut(repo, 'rev-parse', 'main');
  const approvalId = await requestApproval(attemptId);
  await h.inject('POST', `/api/approvals/${approvalId}/respond`, { decision: 'rejected', comment: 'no' }, { 'x-user-email': 'lead@example.com' });
  await eventually(async () => (await h.inject('GET', `/api/approvals/${approvalId}`)).json().data.status === 'rejected');
  const refused = await h.inject('POST', `/api/task-attempts/${attemptId}/merge`, { strategy: 'squash' });
  expect(refused.statusCode).toBe(409);
  expect(refused.json().error.details).toMatchObject({ approvalStatus: 'rejected' });
  expect(gitOut(repo, 'rev-parse', 'main')).toBe(before);
});
