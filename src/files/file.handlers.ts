import type { Request } from 'express';
import type { Handlers } from '../http/contract.ts';
import { requirePrincipal } from '../shared/principal.ts';
import type { FileService, UploadSource } from './file.service.ts';
import { receiveUpload } from './upload-stream.ts';

type FileOps = 'uploadFile' | 'getFile' | 'deleteFile' | 'downloadFile' | 'uploadWidgetFile' | 'getWidgetFile';

// The multipart body is still unread here: the contract validator leaves it alone (fileUploader: false).
const uploadOf = (req: Request): UploadSource => (options, sink) => receiveUpload(req, options, sink);
/** The API's own URL as the client reached it (behind a trusted proxy, as the proxy says). */
const apiUrlOf = (req: Request) => `${req.protocol}://${req.get('host')}${req.baseUrl}`;

export const fileHandlers = (files: FileService): Pick<Handlers, FileOps> => ({
  uploadFile: async ({ principal, req }) => ({ status: 201, body: await files.upload(requirePrincipal(principal), uploadOf(req)) }),
  getFile: async ({ principal, params, req }) => ({ status: 200, body: await files.get(requirePrincipal(principal), params.id, apiUrlOf(req)) }),
  deleteFile: async ({ principal, params }) => ({ status: 200, body: await files.remove(requirePrincipal(principal), params.id) }),
  downloadFile: async ({ params, query }) => {
    const { stream, headers } = await files.download(params.id, query.expires, query.signature);
    return { status: 200, stream, headers };
  },
  uploadWidgetFile: async ({ principal, req }) => ({ status: 201, body: await files.upload(requirePrincipal(principal), uploadOf(req)) }),
  getWidgetFile: async ({ principal, params, req }) => ({ status: 200, body: await files.get(requirePrincipal(principal), params.id, apiUrlOf(req)) }),
});
