/**
 * Every schema the app checks an answer or an opened body with, in one chunk of its own: zod and core/'s wire
 * schemas are about 17 KiB gzip (51 with zod 4's API, before `zod/v3`). `api.ts` loads this module once, while
 * the first request is under way, so the agents list draws without waiting for it (docs/app.md "First load").
 * Import it only through api.ts (`request`, `parseBody`); a static import would bring zod back into the first load
 * (test/unit/app/sizes.test.ts fails then).
 */
export { NotifyBody, QuestionBody } from '../../../core/mcp/ask.js';
export {
  InboxPage,
  PushSubscribeResponse,
  PushUnsubscribeResponse,
  VapidKeyResponse,
} from '../../../core/notify/push.js';
export {
  ApprovalCardBody,
  FileResultBody,
  FrameBody,
  HistoryChunkBody,
  LaunchResultBody,
  SchedulesBody,
} from '../../../core/protocol/bodies.js';
export {
  ComputerListResponse,
  DeviceDeleteResponse,
  DeviceListResponse,
  PairingClaimResponse,
  PushSendResponse,
  PushStatusResponse,
} from '../../../core/protocol/index.js';
export { HistoryPage } from '../../../core/relay/history.js';
