// Runs in a worker thread: bcrypt is CPU-bound and would otherwise stall every request on the event loop.
import bcrypt from 'bcryptjs';

export interface PasswordTask {
  op: 'hash' | 'verify';
  password: string;
  cost?: number;
  hash?: string;
}

export default async function run(task: PasswordTask): Promise<string | boolean> {
  if (task.op === 'hash') return bcrypt.hash(task.password, task.cost ?? 12);
  return bcrypt.compare(task.password, task.hash ?? '');
}
