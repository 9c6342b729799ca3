// Types of the Weir HTTP API (/api/v1): the schemas of the server's OpenAPI document, as
// openapi-typescript generates them into schema.gen.ts (`npm run gen:api`), under the names
// the UI uses. Nothing here is written by hand but the names: a schema that changes on the
// server changes here, and `npm run typecheck` shows the UI code it breaks.

import type { components, operations } from './schema.gen';

export type Schemas = components['schemas'];

export type JobStatus = Schemas['JobStatus'];
export type NodeKind = Schemas['NodeKind'];
export type Partitioning = Schemas['Partitioning'];
export type SavepointMode = Schemas['SavepointMode'];
export type SavepointStatus = Schemas['SavepointStatus'];

export type Quotas = Schemas['Quotas'];
export type Usage = Schemas['Usage'];
export type TenantView = Schemas['TenantView'];
export type WorkerView = Schemas['Worker'];

export type CheckpointSettings = Schemas['CheckpointSettings'];
export type RestartSettings = Schemas['RestartSettings'];
export type JobSettings = Schemas['Settings'];
export type NodeSpec = Schemas['NodeSpec'];
export type EdgeSpec = Schemas['EdgeSpec'];
export type JobSpec = Schemas['JobSpec'];

export type NodeRestore = Schemas['NodeRestore'];
export type RestoreReport = Schemas['RestoreReport'];
export type JobRecord = Schemas['JobRecord'];
export type JobException = Schemas['JobException'];
export type TokenInfo = Schemas['TokenInfo'];
export type StoredLine = Schemas['StoredLine'];
export type JobSummary = Schemas['JobSummary'];
export type SubtaskLive = Schemas['SubtaskLive'];
export type Vertex = Schemas['Vertex'];
export type Edge = Schemas['Edge'];
export type JobDetail = Schemas['JobDetail'];
export type UpgradeRequest = Schemas['UpgradeRequest'];
export type UpgradeAnswer = Schemas['UpgradeAnswer'];
export type UpgradeCheck = Schemas['UpgradeCheck'];
export type RestoreCheck = Schemas['RestoreCheck'];
export type NodeCheck = Schemas['NodeCheck'];
export type JobVersion = Schemas['JobVersion'];
export type VersionOutcome = Schemas['VersionOutcome'];
export type Upgrade = Schemas['Upgrade'];

export type CheckpointView = Schemas['CheckpointView'];
export type CheckpointType = Schemas['CheckpointType'];
export type MinAvgMax = Schemas['MinAvgMax'];
export type CheckpointCounts = Schemas['Counts'];
export type CheckpointSummary = Schemas['Summary'];
export type LatestCheckpoints = Schemas['Latest'];
export type CheckpointHistory = Schemas['History'];
export type OperatorCheckpointView = Schemas['OperatorView'];
export type SubtaskCheckpointView = Schemas['SubtaskView'];
export type CheckpointDetail = Schemas['CheckpointDetail'];

export type StateItem = Schemas['StateItem'];
export type StatePage = Schemas['StatePage'];

export type NodeDescription = Schemas['NodeDescription'];
export type SavepointDescription = Schemas['Description'];
export type SavepointRecord = Schemas['SavepointRecord'];

export type Module = Schemas['Module'];
export type ErrorBody = Schemas['ErrorBody'];

/** The operations of the API, by their `operationId`. */
export type Operation = keyof operations;

type Responses<Op extends Operation> = operations[Op]['responses'];
type JsonOf<R> = R extends { content: { 'application/json': infer Body } } ? Body : never;

/** The JSON body of a successful (2xx) answer to `Op` (to any of them, for a union). */
export type Answer<Op extends Operation> = Op extends Operation
  ? { [Status in keyof Responses<Op>]: Status extends 200 | 201 | 202 ? JsonOf<Responses<Op>[Status]> : never }[keyof Responses<Op>]
  : never;
