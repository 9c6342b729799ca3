// Types of the Weir HTTP API (/api/v1), written from the server's OpenAPI document.
// Only what the UI reads is typed precisely; the rest is carried as `unknown`.

export type JobStatus =
  | 'running'
  | 'restarting'
  | 'stopping'
  | 'stopped'
  | 'finished'
  | 'canceled'
  | 'failed';

export type NodeKind = 'source' | 'operator' | 'sink';
export type Partitioning = 'forward' | 'hash' | 'broadcast' | 'rebalance';
export type SavepointMode = 'keep_running' | 'cancel' | 'stop' | 'drain';
export type SavepointStatus = 'pending' | 'completed' | 'failed';
export type CheckpointStatus = 'in_progress' | 'completed' | 'failed';

export interface Collection<T> {
  data: T[];
}

export interface Quotas {
  max_jobs?: number;
  max_subtasks?: number;
  max_memory_mb?: number;
  max_cpu_ms?: number;
  max_module_bytes?: number;
  max_storage_bytes?: number;
}

export interface TenantView {
  id: string;
  name: string;
  created_ms: number;
  quotas: Quotas;
  usage: { jobs: number; subtasks: number; storage_bytes: number };
}

export interface CheckpointSettings {
  interval_ms?: number | null;
  timeout_ms?: number;
  min_pause_ms?: number;
  max_concurrent?: number;
  tolerable_failures?: number;
  retained?: number;
  max_chain_length?: number;
}

export interface JobSettings {
  max_parallelism?: number;
  channel_capacity?: number;
  cpu_limit_ms?: number;
  memory_limit_mb?: number;
  max_output_bytes_per_call?: number;
  checkpoint?: CheckpointSettings;
  restart?: { attempts?: number; delay_ms?: number };
}

export interface NodeSpec {
  id: string;
  kind: NodeKind;
  parallelism?: number;
  module?: string | null;
  connector?: string | null;
  config?: Record<string, unknown>;
}

export interface EdgeSpec {
  from: string;
  to: string;
  partitioning?: Partitioning | null;
}

export interface JobSpec {
  name?: string;
  nodes: NodeSpec[];
  edges?: EdgeSpec[];
  settings?: JobSettings;
}

export interface NodeRestore {
  id: string;
  restored: boolean;
  parallelism: number;
  from_parallelism?: number | null;
  migrated: boolean;
  keyed_entries: number;
  state_versions?: [number, number] | null;
}

export interface RestoreReport {
  savepoint: string;
  checkpoint: number;
  nodes: NodeRestore[];
  dropped: string[];
}

export interface JobRecord {
  id: string;
  name: string;
  status: JobStatus;
  error?: string | null;
  created_ms: number;
  start_ms?: number | null;
  end_ms?: number | null;
  restarts: number;
  subtasks: number;
  spec: JobSpec;
  restored_from?: RestoreReport | null;
}

export interface JobSummary extends JobRecord {
  source_records_per_second: number;
  sink_records_per_second: number;
  backpressure: number;
}

export interface SubtaskLive {
  subtask: number;
  records_in: number;
  records_out: number;
  records_in_per_second: number;
  records_out_per_second: number;
  backpressure: number;
}

export interface Vertex {
  id: string;
  kind: NodeKind;
  parallelism: number;
  module?: string | null;
  connector?: string | null;
  records_in: number;
  records_out: number;
  records_in_per_second: number;
  records_out_per_second: number;
  backpressure: number;
  subtasks: SubtaskLive[];
}

export interface Edge {
  from: string;
  to: string;
  partitioning: Partitioning;
}

export interface CheckpointView {
  id: number;
  status: CheckpointStatus | string;
  is_final: boolean;
  stopped: boolean;
  trigger_time_ms: number;
  latest_ack_time_ms?: number | null;
  end_time_ms?: number | null;
  duration_ms?: number | null;
  state_size: number;
  full_size: number;
  acknowledged_subtasks: number;
  total_subtasks: number;
  max_alignment_ms: number;
  alignment_bytes: number;
  persisted_in_flight_bytes: number;
  unaligned: boolean;
  pinned: boolean;
  retained: boolean;
  savepoint?: string | null;
  failure?: string | null;
}

export interface JobDetail extends JobRecord {
  vertices: Vertex[];
  edges: Edge[];
  latest_checkpoint?: CheckpointView | null;
}

export interface MinAvgMax {
  min: number;
  avg: number;
  max: number;
}

export interface CheckpointCounts {
  total: number;
  in_progress: number;
  completed: number;
  failed: number;
}

export interface CheckpointSummary {
  duration_ms: MinAvgMax;
  state_size: MinAvgMax;
  full_size: MinAvgMax;
  max_alignment_ms: MinAvgMax;
  alignment_bytes: MinAvgMax;
}

export interface CheckpointHistory {
  counts: CheckpointCounts;
  summary: CheckpointSummary;
  latest: { completed?: CheckpointView | null; failed?: CheckpointView | null };
  data: CheckpointView[];
}

export interface OperatorCheckpointView {
  id: string;
  acknowledged_subtasks: number;
  state_size: number;
  full_size: number;
  max_end_to_end_ms: number;
  sync_ms: MinAvgMax;
  async_ms: MinAvgMax;
  alignment_ms: MinAvgMax;
  alignment_bytes: MinAvgMax;
  start_delay_ms: MinAvgMax;
}

export interface SubtaskCheckpointView {
  operator: string;
  subtask: number;
  ack_time_ms: number;
  sync_ms: number;
  async_ms: number;
  alignment_ms: number;
  alignment_bytes: number;
  start_delay_ms: number;
  state_bytes: number;
  full_state_bytes: number;
}

export interface CheckpointDetail extends CheckpointView {
  operators: OperatorCheckpointView[];
  subtasks: SubtaskCheckpointView[];
}

export interface StateItem {
  key_group?: number | null;
  subtask?: number | null;
  state: string;
  key: unknown;
  value: unknown;
}

export interface StatePage {
  operator: string;
  data: StateItem[];
  next?: string | null;
}

export interface NodeDescription {
  id: string;
  kind: NodeKind;
  parallelism: number;
  module?: string | null;
  connector?: string | null;
  state_version?: number | null;
}

export interface SavepointDescription {
  format: number;
  job_name: string;
  max_parallelism: number;
  nodes: NodeDescription[];
}

export interface SavepointRecord {
  id: string;
  job: string;
  job_name: string;
  mode?: SavepointMode | null;
  status: SavepointStatus;
  checkpoint?: number | null;
  error?: string | null;
  created_ms: number;
  completed_ms?: number | null;
  bytes: number;
  entries: number;
  origin?: string | null;
  description?: SavepointDescription | null;
}

export interface Module {
  id: string;
  name: string;
  size: number;
  created_ms: number;
  exports: string[];
}

export interface ErrorBody {
  error: string;
}
