import type { Handlers } from '../http/contract.ts';
import { DEFAULT_PAGE_SIZE } from '../shared/pagination.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { WorkflowService } from './workflow.service.ts';

type WorkflowOps = 'listWorkflows' | 'createWorkflow' | 'getWorkflow' | 'updateWorkflow' | 'deleteWorkflow' | 'listWorkflowRuns' | 'rotateWorkflowSecret';

export const workflowHandlers = (workflows: WorkflowService): Pick<Handlers, WorkflowOps> => ({
  listWorkflows: async ({ principal, query }) => ({
    status: 200,
    body: await workflows.list(requirePrincipal(principal), { limit: query.limit ?? DEFAULT_PAGE_SIZE, offset: query.offset ?? 0 }),
  }),
  createWorkflow: async ({ principal, body }) => ({ status: 201, body: await workflows.create(requirePrincipal(principal), body) }),
  getWorkflow: async ({ principal, params }) => ({ status: 200, body: await workflows.get(requirePrincipal(principal), params.id) }),
  updateWorkflow: async ({ principal, params, body }) => ({ status: 200, body: await workflows.update(requirePrincipal(principal), params.id, body) }),
  deleteWorkflow: async ({ principal, params }) => ({ status: 200, body: await workflows.remove(requirePrincipal(principal), params.id) }),
  rotateWorkflowSecret: async ({ principal, params }) => ({ status: 200, body: await workflows.rotateSecret(requirePrincipal(principal), params.id) }),
  listWorkflowRuns: async ({ principal, params, query }) => ({
    status: 200,
    body: await workflows.listRuns(requirePrincipal(principal), params.id, { status: query.status }, { limit: query.limit ?? DEFAULT_PAGE_SIZE, cursor: query.cursor }),
  }),
});
