import { $api } from '../../../lib/api.ts';
import type { View } from './views.ts';

export const listOptions = (view: View) => $api.queryOptions('get', '/v1/conversations', { params: { query: view.query } });
