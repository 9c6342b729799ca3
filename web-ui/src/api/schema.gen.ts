// Generated from openapi.json by openapi-typescript: do not edit. Run `npm run gen:api`.
// openapi.json itself is the server's document: `WEIR_BLESS=1 cargo nextest run --workspace -E 'test(/^api::openapi::/)'`.

export interface paths {
    "/api/v1/jobs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Lists the caller's jobs with their live throughput. */
        get: operations["list_jobs"];
        put?: never;
        /**
         * Creates a job from its JSON spec and starts it. Operators name their module by id, by
         *     the name it was uploaded under, or `builtin:<name>`; stream connectors name the
         *     caller's streams; `file` connectors are not available over the API. With
         *     `from_savepoint`, the savepoint is checked against the job before anything starts.
         */
        post: operations["create_job"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/jobs/{job_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One job: status, graph, live records in/out and backpressure per operator and subtask. */
        get: operations["get_job"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/jobs/{job_id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancels a job at once (no final checkpoint). `restart` resumes it from its latest
         *     checkpoint.
         */
        post: operations["cancel_job"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/jobs/{job_id}/checkpoints": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The checkpoint history of a job. */
        get: operations["list_checkpoints"];
        put?: never;
        /** Triggers a checkpoint of a running job now. */
        post: operations["trigger_checkpoint"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/jobs/{job_id}/checkpoints/{checkpoint_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One checkpoint of a job. */
        get: operations["get_checkpoint"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/jobs/{job_id}/checkpoints/{checkpoint_id}/state/{operator}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The state of an operator in a retained checkpoint of a job. */
        get: operations["checkpoint_state"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/jobs/{job_id}/exceptions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The job's exception history: its last 100 failures, newest first, each with its time, the
         *     restart it led to, whose failure it was (`user_code`, `bad_data`, `external`,
         *     `platform`: the platform's use up no restart attempt), where it happened, the error and
         *     what Weir did. Kept across server restarts.
         */
        get: operations["list_job_exceptions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/jobs/{job_id}/logs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The job's operator log: every line its operators logged (the SDKs' logging, and what they
         *     wrote to stdout and stderr), with its node, subtask, attempt, level and time, oldest
         *     first. Kept in a ring of the tenant's `max_log_bytes_per_job` bytes, across server
         *     restarts; each instance is held to a rate of lines and bytes per second, and what passes
         *     it is dropped and counted.
         */
        get: operations["get_job_logs"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/jobs/{job_id}/restart": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Restarts a job from its latest checkpoint (a running job is cancelled first). */
        post: operations["restart_job"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/jobs/{job_id}/savepoints": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Lists the savepoints taken of a job, oldest first. */
        get: operations["list_job_savepoints"];
        put?: never;
        /**
         * Takes a savepoint of a job. It is `pending` until its checkpoint completed and was
         *     copied: poll `GET /api/v1/savepoints/{id}`. A job that is not running gives a savepoint
         *     of its latest checkpoint (mode `keep_running` only), completed at once.
         */
        post: operations["trigger_savepoint"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/jobs/{job_id}/stop": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Stops a job: its sources stop, a final checkpoint commits every output, and the job
         *     ends `stopped`. `restart` resumes it from there.
         */
        post: operations["stop_job"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/jobs/{job_id}/upgrade": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Upgrades a running job to a new version (new modules, parallelism or settings) in one
         *     step. Before anything stops, a savepoint of the job is checked against the new version
         *     (422 with the reason when its state does not fit; `dry_run` answers the check and
         *     changes nothing). Then the job stops at a savepoint, the new version starts from it on
         *     probation (`grace_period_ms`, no checkpoint meanwhile), and if it fails to restore or
         *     fails on probation the old version is restored from the same savepoint; the job's
         *     `upgrade`, `error`, exceptions and version history say what happened. Answers once the
         *     new version started (or was rolled back already); the job's `upgrade` is cleared when
         *     the probation ends.
         */
        post: operations["upgrade_job"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/jobs/{job_id}/versions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A job's versions, oldest first: each one's spec, its operators' module digests, the
         *     savepoint it started from, and what became of it (current, replaced, rolled back with
         *     the reason, abandoned). The latest 20 are kept.
         */
        get: operations["list_job_versions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/kafka/connections": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The Kafka connections the caller's jobs may use: names and prefixes, never addresses or
         *     credentials. A job's Kafka node names one in `connection`.
         */
        get: operations["list_kafka_connections"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/kafka/server-connections": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The server's Kafka connections (its `kafka_connections`), for the admin: addresses, the
         *     security protocol, the SASL mechanism and user, whether TLS files are set, and the tenants
         *     granted each — never a password or a key.
         */
        get: operations["list_server_kafka_connections"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The caller's own metrics, in Prometheus' text format: every series with its tenant's
         *     `tenant` label (its jobs' records, checkpoints, restarts, dead letters, its usage against
         *     its quotas) and nothing of any other tenant, the process or the workers.
         */
        get: operations["tenant_metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/modules": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Lists the caller's modules. */
        get: operations["list_modules"];
        put?: never;
        /**
         * Uploads a module: a `multipart/form-data` body with a `file` field (and optionally
         *     `name`), or the component itself as `application/wasm` with `?name=`. The component is
         *     validated against the `weir:operator` world (on its import and export names before it is
         *     compiled) and compiled once; uploading the same bytes again returns the existing module,
         *     and bytes refused before are refused again without compiling.
         */
        post: operations["upload_module"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/modules/{module_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One module. */
        get: operations["get_module"];
        put?: never;
        post?: never;
        /** Deletes a module no job of the caller's uses (finished jobs do not count). */
        delete: operations["delete_module"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/savepoints": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Lists the caller's savepoints (triggered and imported), oldest first. */
        get: operations["list_savepoints"];
        put?: never;
        /**
         * Imports a savepoint file (as exported by any Weir server) as a new savepoint of the
         *     caller. The upload is saved to a temporary file first (the import itself holds the
         *     store's writer, which must not wait on a slow client); the whole file is then checked
         *     (format, version, every frame, checksum) before anything is stored, and a bad file
         *     stores nothing.
         */
        post: operations["import_savepoint"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/savepoints/{savepoint_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * One savepoint: status, the checkpoint it copies, size, and the job it describes (nodes,
         *     parallelism, modules and state schema versions).
         */
        get: operations["get_savepoint"];
        put?: never;
        post?: never;
        /** Disposes of a savepoint: its state is deleted. Jobs started from it keep theirs. */
        delete: operations["delete_savepoint"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/savepoints/{savepoint_id}/file": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Downloads a completed savepoint as one portable file (`docs/savepoint-format.md`). The
         *     file is spooled on the server first: its bytes count against the tenant's storage quota
         *     (429 without room) and the request against `max_requests_per_tenant` until the body has
         *     been read.
         */
        get: operations["export_savepoint"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/savepoints/{savepoint_id}/state/{operator}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The state of an operator in a savepoint. */
        get: operations["savepoint_state"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/streams": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Lists the caller's streams. */
        get: operations["list_streams"];
        put?: never;
        /** Creates a stream (again with the same partition count: no change). */
        post: operations["create_stream"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/streams/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One stream with its end offsets. */
        get: operations["get_stream"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/streams/{name}/records": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Reads records of one partition from an offset: at most `limit` records and at most the
         *     server's `max_page_bytes` of them (at least one record); continue from `next_offset`.
         */
        get: operations["read_records"];
        put?: never;
        /**
         * Appends records: `{"records": [{"key": ..., "value": ..., "timestamp": ..., "partition": ...}]}`
         *     as JSON, or the same structure as MessagePack (`Content-Type: application/msgpack`).
         *     All records are appended or none.
         */
        post: operations["append_records"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tenant": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The caller's tenant: quotas and usage. */
        get: operations["whoami"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tenant/tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The caller's tokens: ids, labels and creation times, never the tokens. */
        get: operations["list_own_tokens"];
        put?: never;
        /**
         * Issues another token of the caller (at most 64 per tenant), when the admin allows it;
         *     the token is shown only in this answer.
         */
        post: operations["issue_own_token"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tenant/tokens/{token_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revokes one of the caller's tokens, when the admin allows it: from the next request on it
         *     answers 401 (the token of this request too).
         */
        delete: operations["revoke_own_token"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tenants": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Lists the tenants. */
        get: operations["list_tenants"];
        put?: never;
        /** Creates a tenant and its first token. */
        post: operations["create_tenant"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tenants/{tenant_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One tenant, with its usage. */
        get: operations["get_tenant"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tenants/{tenant_id}/disable": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Disables a tenant: its requests answer 403, its running jobs stop at once (recorded
         *     `stopped` with the reason, resumed by `enable`), its data stays. Survives a restart.
         */
        post: operations["disable_tenant"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tenants/{tenant_id}/enable": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Enables a disabled tenant: its tokens work again and the jobs that disabling stopped
         *     resume from their latest checkpoints.
         */
        post: operations["enable_tenant"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tenants/{tenant_id}/kafka": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /**
         * Replaces a tenant's Kafka grants: which of the server's `kafka_connections` its jobs may
         *     use, and the topic and group prefixes they are held to there. An empty list takes Kafka
         *     away (running jobs keep running until they are next planned: restarted or resumed).
         */
        put: operations["set_kafka_grants"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tenants/{tenant_id}/quotas": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /** Replaces a tenant's quotas. */
        put: operations["set_quotas"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tenants/{tenant_id}/settings": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /** Sets what the admin lets a tenant do itself. */
        put: operations["set_settings"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tenants/{tenant_id}/tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Lists a tenant's tokens: ids, labels and creation times, never the tokens. */
        get: operations["list_tokens"];
        put?: never;
        /**
         * Issues another token for a tenant (a tenant holds at most 64); the token is shown only
         *     in this answer.
         */
        post: operations["issue_token"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tenants/{tenant_id}/tokens/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Rotates a tenant's tokens in one step: issues a new token and revokes the old one(s)
         *     (`token_id`: that one; default: all). For a rotation without a gap, issue a second
         *     token instead, move the clients to it, then revoke the first.
         */
        post: operations["rotate_tokens"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tenants/{tenant_id}/tokens/{token_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Revokes one of a tenant's tokens: from the next request on it answers 401. */
        delete: operations["revoke_token"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/workers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The live workers (by id), then the most recently lost ones (newest first, at most 64).
         *     Empty without `cluster.listen`.
         */
        get: operations["list_workers"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Health: the store's state and the data directory's free space. 503 while the store
         *     cannot serve (it is being reopened after an I/O error).
         */
        get: operations["health"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description Records to append. */
        AppendBody: {
            /** @description The records, in order. */
            records: components["schemas"]["NewRecord"][];
        };
        /** @description Where an appended record went. */
        Appended: {
            /**
             * Format: int64
             * @description Its offset.
             */
            offset: number;
            /**
             * Format: int32
             * @description Its partition.
             */
            partition: number;
        };
        /** @description One checkpoint with per-operator and per-subtask statistics. */
        CheckpointDetail: components["schemas"]["CheckpointView"] & {
            /** @description Per operator, in graph order. */
            operators: components["schemas"]["OperatorView"][];
            /** @description Per subtask. */
            subtasks: components["schemas"]["SubtaskView"][];
        };
        /**
         * @description How checkpoint barriers pass the records in flight.
         * @enum {string}
         */
        CheckpointMode: "aligned" | "unaligned";
        /** @description Checkpointing settings (Flink's names where they exist). */
        CheckpointSettings: {
            /**
             * Format: int64
             * @description A checkpoint starts aligned and switches to unaligned once it has waited this long
             *     since its trigger (Flink's `aligned-checkpoint-timeout`); `null`: never switch.
             *     With `mode: unaligned` a missing value means 0 (unaligned from the start).
             * @default null
             */
            aligned_timeout_ms?: number | null;
            /**
             * Format: int64
             * @description Trigger a checkpoint this often; `null` for none but the final one and those
             *     triggered on demand.
             * @default 1000
             */
            interval_ms?: number | null;
            /**
             * @description Most increments (checkpoints that added to it, its base one) a key group's chain may
             *     hold before it is compacted into a new base. Each chain compacts at a threshold of
             *     its own between half this and this, so that key groups do not all compact at the
             *     same checkpoint.
             * @default 8
             */
            max_chain_length?: number;
            /**
             * @description Most checkpoints in progress at once.
             * @default 1
             */
            max_concurrent?: number;
            /**
             * Format: int64
             * @description Least time between the end of one checkpoint and the trigger of the next.
             * @default 0
             */
            min_pause_ms?: number;
            /** @default aligned */
            mode?: components["schemas"]["CheckpointMode"];
            /**
             * @description Completed checkpoints kept for recovery (older ones are removed with their state).
             * @default 2
             */
            retained?: number;
            /**
             * Format: int64
             * @description A checkpoint not completed within this time is aborted.
             * @default 60000
             */
            timeout_ms?: number;
            /**
             * Format: int32
             * @description Consecutive failed checkpoints the job tolerates; one more fails the job.
             * @default 3
             */
            tolerable_failures?: number;
        };
        /**
         * @description How a checkpoint's barriers were handled (Flink's `checkpoint_type`: `CHECKPOINT` or
         *     `UNALIGNED_CHECKPOINT`, with the switch from one to the other told apart). Of a checkpoint
         *     in progress: as far as its acknowledged subtasks tell.
         * @enum {string}
         */
        CheckpointType: "aligned" | "unaligned" | "aligned_then_unaligned";
        /** @description A checkpoint in the history. */
        CheckpointView: {
            /**
             * Format: int32
             * @description Subtasks that acknowledged it.
             */
            acknowledged_subtasks: number;
            /**
             * Format: int64
             * @description Bytes processed during alignment, all subtasks (Flink's "processed in-flight data").
             */
            alignment_bytes: number;
            /**
             * @description How its barriers were handled: `aligned`, `unaligned` (from the start), or
             *     `aligned_then_unaligned` (it began aligned and switched after `aligned_timeout_ms`).
             */
            checkpoint_type: components["schemas"]["CheckpointType"];
            /**
             * Format: double
             * @description End-to-end duration.
             */
            duration_ms?: number | null;
            /**
             * Format: int64
             * @description Completion (or failure) time, unix ms.
             */
            end_time_ms?: number | null;
            /** @description Why it failed. */
            failure?: string | null;
            /**
             * Format: int64
             * @description Bytes of the whole state it refers to.
             */
            full_size: number;
            /**
             * Format: int64
             * @description Its id.
             */
            id: number;
            /** @description Taken at the end of the job (input ended, or stopped). */
            is_final: boolean;
            /**
             * Format: int64
             * @description When the latest acknowledgement arrived, unix ms.
             */
            latest_ack_time_ms?: number | null;
            /**
             * Format: double
             * @description Longest alignment of a subtask.
             */
            max_alignment_ms: number;
            /**
             * Format: int64
             * @description Bytes of in-flight records persisted with the checkpoint as channel state (by the
             *     subtasks that took it unaligned), all subtasks.
             */
            persisted_in_flight_bytes: number;
            /** @description Taken for a savepoint (kept from retention until the savepoint copied it). */
            pinned: boolean;
            /**
             * Format: int64
             * @description The same as `alignment_bytes`, under Flink's name: bytes of in-flight records the
             *     subtasks processed before their barriers were aligned.
             */
            processed_in_flight_bytes: number;
            /** @description Its state is still kept (retention removes old ones). */
            retained: boolean;
            /**
             * @description The savepoint whose state this checkpoint holds (a job's first, when it started from
             *     a savepoint).
             */
            savepoint?: string | null;
            /**
             * Format: int64
             * @description Bytes written by this checkpoint (incremental size).
             */
            state_size: number;
            /** @description `in_progress`, `completed` or `failed`. */
            status: string;
            /** @description The final checkpoint of a stopped job (it resumes from it). */
            stopped: boolean;
            /**
             * Format: int64
             * @description When the first subtask switched it from aligned to unaligned, unix ms (none when no
             *     subtask switched).
             */
            switched_to_unaligned_ms?: number | null;
            /**
             * Format: int32
             * @description Subtasks of the job.
             */
            total_subtasks: number;
            /**
             * Format: int64
             * @description Trigger time, unix ms.
             */
            trigger_time_ms: number;
            /** @description At least one subtask took it unaligned (from its start, or after switching). */
            unaligned: boolean;
        };
        /** @description Counts by status. */
        Counts: {
            /**
             * Format: int64
             * @description Completed.
             */
            completed: number;
            /**
             * Format: int64
             * @description Failed.
             */
            failed: number;
            /**
             * Format: int64
             * @description In progress.
             */
            in_progress: number;
            /**
             * Format: int64
             * @description Completed ones that began aligned and switched to unaligned (part of `unaligned`).
             */
            switched_to_unaligned: number;
            /**
             * Format: int64
             * @description Every checkpoint.
             */
            total: number;
            /**
             * Format: int64
             * @description Completed ones taken unaligned (by at least one subtask, from the start or after a
             *     switch).
             */
            unaligned: number;
        };
        /** @description A collection. */
        Data_Appended: {
            /** @description The items. */
            data: {
                /**
                 * Format: int64
                 * @description Its offset.
                 */
                offset: number;
                /**
                 * Format: int32
                 * @description Its partition.
                 */
                partition: number;
            }[];
        };
        /** @description A collection. */
        Data_JobException: {
            /** @description The items. */
            data: {
                /** @description What Weir did. */
                action: components["schemas"]["ExceptionAction"];
                /**
                 * Format: int32
                 * @description The restart it led to (1 for the first), or the restarts made before the job failed.
                 */
                attempt: number;
                class?: null | components["schemas"]["FailureClass"];
                /**
                 * Format: int64
                 * @description The pause before the restart (`restarted` only).
                 */
                delay_ms?: number | null;
                /** @description The error and its causes (at most 4 KiB). */
                error: string;
                /** @description The node whose subtask failed, when one did. */
                node?: string | null;
                /**
                 * Format: int64
                 * @description Its number in the job's history (1 for the first failure ever).
                 */
                seq: number;
                /**
                 * Format: int32
                 * @description That subtask.
                 */
                subtask?: number | null;
                /**
                 * Format: int64
                 * @description When it happened, unix ms.
                 */
                time_ms: number;
                /**
                 * Format: int64
                 * @description The worker it ran on, when it ran on one.
                 */
                worker?: number | null;
            }[];
        };
        /** @description A collection. */
        Data_JobSummary: {
            /** @description The items. */
            data: (components["schemas"]["JobRecord"] & {
                /**
                 * Format: double
                 * @description The largest backpressure of any subtask (0 to 1).
                 */
                backpressure: number;
                /**
                 * Format: double
                 * @description Records its sinks received per second, last second.
                 */
                sink_records_per_second: number;
                /**
                 * Format: double
                 * @description Records its sources emitted per second, last second (0 when not running).
                 */
                source_records_per_second: number;
            })[];
        };
        /** @description A collection. */
        Data_JobVersion: {
            /** @description The items. */
            data: {
                /**
                 * Format: int64
                 * @description When it was submitted, unix ms.
                 */
                created_ms: number;
                /** @description Per operator: the module it runs (its id is the SHA-256 digest of its bytes). */
                modules: components["schemas"]["VersionModule"][];
                /** @description What became of it. */
                outcome: components["schemas"]["VersionOutcome"];
                /** @description Why it was refused, rolled back or abandoned. */
                reason?: string | null;
                /** @description The savepoint it started from (an upgrade's; none for the first version). */
                savepoint?: string | null;
                /** @description The spec, with module references pinned to module ids. */
                spec: components["schemas"]["JobSpec"];
                /**
                 * Format: int32
                 * @description Its number (1, 2, ...).
                 */
                version: number;
            }[];
        };
        /** @description A collection. */
        Data_KafkaGrant: {
            /** @description The items. */
            data: {
                /** @description The connection's name (a key of the server's `kafka_connections`). */
                connection: string;
                /**
                 * @description Consumer group ids and transactional ids its jobs may use: those starting with one
                 *     of these (`""`: any).
                 */
                group_prefixes?: string[];
                /**
                 * @description Topics the tenant's jobs may read and write: those starting with one of these
                 *     (`""`: every topic; none: no topic).
                 */
                topic_prefixes?: string[];
            }[];
        };
        /** @description A collection. */
        Data_Module: {
            /** @description The items. */
            data: {
                /**
                 * Format: int64
                 * @description Upload time, unix ms.
                 */
                created_ms: number;
                /** @description The component's exports. */
                exports: string[];
                /** @description The SHA-256 of its bytes (64 hex digits): its id. */
                id: string;
                /**
                 * @description The name it was uploaded under; jobs may refer to it by this name (the latest upload
                 *     of a name wins) or by id.
                 */
                name: string;
                /**
                 * Format: int64
                 * @description Size in bytes.
                 */
                size: number;
            }[];
        };
        /** @description A collection. */
        Data_SavepointRecord: {
            /** @description The items. */
            data: {
                /**
                 * Format: int64
                 * @description Bytes of state (keys, values and subtask blobs).
                 */
                bytes: number;
                /**
                 * Format: int64
                 * @description The job's checkpoint it copies (once known).
                 */
                checkpoint?: number | null;
                /**
                 * Format: int64
                 * @description When it completed or failed, unix ms.
                 */
                completed_ms?: number | null;
                /**
                 * Format: int64
                 * @description When it was triggered (or imported), unix ms.
                 */
                created_ms: number;
                description?: null | components["schemas"]["Description"];
                /**
                 * Format: int64
                 * @description Keyed and operator state entries.
                 */
                entries: number;
                /** @description Why it failed. */
                error?: string | null;
                /** @description Its id (32 hex digits). */
                id: string;
                /** @description The job it was taken from (for an imported one: the job on the server it came from). */
                job: string;
                /** @description The job's name. */
                job_name: string;
                mode?: null | components["schemas"]["SavepointMode"];
                /** @description Imported: the id it had on the server it was exported from. */
                origin?: string | null;
                /** @description Pending, completed or failed. */
                status: components["schemas"]["SavepointStatus"];
            }[];
        };
        /** @description A collection. */
        Data_ServerKafkaConnection: {
            /** @description The items. */
            data: {
                /** @description `host:port` of its brokers. */
                bootstrap_servers: string[];
                /** @description The names of the tenants granted it, in name order. */
                granted_to: string[];
                /** @description Its name (tenants' grants and jobs' `connection` name it). */
                name: string;
                /** @description The SASL mechanism, for the `sasl_*` protocols. */
                sasl_mechanism?: string | null;
                /** @description The SASL user (never the password). */
                sasl_username?: string | null;
                /** @description `plaintext`, `ssl`, `sasl_plaintext` or `sasl_ssl`. */
                security_protocol: string;
                /** @description A CA or client certificate file is set (their paths and the key are not shown). */
                tls_files: boolean;
            }[];
        };
        /** @description A collection. */
        Data_StoredLine: {
            /** @description The items. */
            data: (components["schemas"]["LogLine"] & {
                /**
                 * Format: int64
                 * @description Its number in the job's log (1 for the first line ever; never reused).
                 */
                seq: number;
            })[];
        };
        /** @description A collection. */
        Data_StreamInfo: {
            /** @description The items. */
            data: {
                /** @description The next offset of every partition (records so far). */
                end_offsets: number[];
                /** @description Its name. */
                name: string;
                /**
                 * Format: int32
                 * @description Number of partitions.
                 */
                partitions: number;
            }[];
        };
        /** @description A collection. */
        Data_Tenant: {
            /** @description The items. */
            data: {
                /**
                 * Format: int64
                 * @description Creation time, unix ms.
                 */
                created_ms: number;
                /**
                 * Format: int64
                 * @description When the admin disabled it, unix ms; `null` while it is enabled. A disabled
                 *     tenant's requests answer 403, its jobs are stopped and its data kept.
                 */
                disabled_ms?: number | null;
                /** @description Its id (16 hex digits). */
                id: string;
                /**
                 * @description The server's Kafka connections its jobs may use, and what through each (none: no
                 *     Kafka). Set by the admin (`PUT /api/v1/tenants/{tenant_id}/kafka`).
                 */
                kafka: components["schemas"]["KafkaGrant"][];
                /**
                 * @description The tenant may issue and revoke its own tokens (`/api/v1/tenant/tokens`). Set by the
                 *     admin (`PUT /api/v1/tenants/{tenant_id}/settings`).
                 */
                manage_own_tokens?: boolean;
                /** @description Its name. */
                name: string;
                /** @description Its quotas. */
                quotas: components["schemas"]["Quotas"];
                /** @description Jobs that were running when it was disabled; enabling resumes them. */
                suspended_jobs: string[];
            }[];
        };
        /** @description A collection. */
        Data_TokenInfo: {
            /** @description The items. */
            data: {
                /**
                 * Format: int64
                 * @description When it was issued, unix ms (a token from before token ids: its tenant's creation).
                 */
                created_ms: number;
                /** @description Its id (16 hex digits). */
                id: string;
                /** @description What it is for. */
                label?: string | null;
            }[];
        };
        /** @description A collection. */
        Data_Worker: {
            /** @description The items. */
            data: {
                /** @description Where other workers reach its data plane. */
                data_addr: string;
                /**
                 * Format: int64
                 * @description Milliseconds since its last heartbeat (for a lost worker: when it was lost).
                 */
                heartbeat_age_ms: number;
                /**
                 * Format: int64
                 * @description Its id: one per session (a worker that registers again gets a new one).
                 */
                id: number;
                /**
                 * @description Why it was lost: `no heartbeat for … ms`, `the session closed`, `left: …`,
                 *     `replaced by a new session of the same worker`; `null` while live.
                 */
                lost_reason?: string | null;
                /** @description Its name (a pod or host name). */
                name: string;
                /** @description Where its control session comes from. */
                peer: string;
                /**
                 * Format: int64
                 * @description When it registered, unix ms.
                 */
                registered_ms: number;
                /**
                 * Format: int32
                 * @description Subtasks it runs at once.
                 */
                slots: number;
                /** @description `live`, or `lost` (see `lost_reason`). */
                status: string;
                /**
                 * Format: int32
                 * @description Subtasks of running jobs it runs now (0 for a lost worker).
                 */
                subtasks: number;
                /**
                 * Format: int32
                 * @description Slots reserved for jobs' running attempts.
                 */
                used_slots: number;
                /** @description Its build (`weir` version). */
                version: string;
            }[];
        };
        /** @description The dead-letter destination of a job: a sink. */
        DeadLetterSpec: {
            /** @description The connector's config, as a sink node's. */
            config?: Record<string, unknown>;
            /** @description The sink connector: `stream` (a stream of the tenant) or `kafka` (a granted topic). */
            connector: string;
        };
        /**
         * @description What a savepoint says about the job it was taken from (stored with it and carried in its
         *     export file).
         */
        Description: {
            /**
             * Format: int32
             * @description Layout version ([`DESCRIPTION_FORMAT`]).
             */
            format: number;
            /** @description The job's name. */
            job_name: string;
            /**
             * Format: int32
             * @description The number of key groups keyed state is divided into.
             */
            max_parallelism: number;
            /** @description Every node of the job, in spec order. */
            nodes: components["schemas"]["NodeDescription"][];
        };
        /** @description An edge of the job's graph. */
        Edge: {
            /** @description Upstream node id. */
            from: string;
            /** @description Partitioning. */
            partitioning: components["schemas"]["Partitioning"];
            /** @description Downstream node id. */
            to: string;
        };
        /** @description One edge of the graph. */
        EdgeSpec: {
            /** @description Upstream node id. */
            from: string;
            /**
             * @description The input port of `to` this edge feeds, one of the names in its `inputs`; required
             *     when `to` names its inputs, refused when it does not. One node may feed two ports of
             *     another (a self-join): each port gets every record.
             */
            input?: string | null;
            /**
             * @description The output of `from` this edge carries: absent for its main output (the records its
             *     calls return), a name for the operator's side output of that name (records it emits
             *     with the `side-output` import, such as a window's late records). Only operators have
             *     side outputs; at most 16 names per operator.
             */
            output?: string | null;
            partitioning?: null | components["schemas"]["Partitioning"];
            /** @description Downstream node id. */
            to: string;
        };
        /** @description The body of every error response. */
        ErrorBody: {
            /** @description What went wrong, and what to do. */
            error: string;
        };
        /**
         * @description What Weir did about a failure.
         * @enum {string}
         */
        ExceptionAction: "restarted" | "failed" | "dead_lettered" | "skipped" | "rolled_back";
        /**
         * @description Who a failure is down to, for the restart strategy and the exception history: the
         *     platform's own failures (a lost worker, the store, a Weir bug) restart the job without
         *     using up the tenant's attempts.
         * @enum {string}
         */
        FailureClass: "user_code" | "bad_data" | "external" | "platform";
        /** @description The answer of `/healthz`. */
        Health: {
            /**
             * Format: int64
             * @description Bytes free on the data directory's disk (none when it cannot be measured).
             */
            disk_free_bytes?: number | null;
            /**
             * Format: int64
             * @description Bytes kept free on that disk: writes that would leave less answer 507.
             */
            disk_reserved_bytes?: number | null;
            /** @description `ok` when the server serves; otherwise the store's state (and the status is 503). */
            status: string;
            /**
             * @description The store: `ok`, `reopening` (it met an I/O error, such as a full disk; the runs are
             *     stopped and it is being reopened) or `failed` (reopening it failed; retried).
             */
            store: string;
            /** @description Why the store is not `ok`: the I/O error, then the last error of reopening it. */
            store_error?: string | null;
            /** @description The I/O error that made the store reopen last. */
            store_last_failure?: string | null;
            /**
             * Format: int64
             * @description Times the store was reopened since the server started.
             */
            store_reopens: number;
        };
        /** @description The checkpoint history of a job. */
        History: {
            /** @description Counts by status. */
            counts: components["schemas"]["Counts"];
            /** @description Checkpoints, newest first (at most `limit`). */
            data: components["schemas"]["CheckpointView"][];
            /** @description The latest ones. */
            latest: components["schemas"]["Latest"];
            /** @description Summary over the completed checkpoints. */
            summary: components["schemas"]["Summary"];
        };
        /** @description A job with its graph and live figures. */
        JobDetail: components["schemas"]["JobRecord"] & {
            /** @description Its edges. */
            edges: components["schemas"]["Edge"][];
            latest_checkpoint?: null | components["schemas"]["CheckpointView"];
            /** @description Its nodes. */
            vertices: components["schemas"]["Vertex"][];
        };
        /** @description One failure of a job. */
        JobException: {
            /** @description What Weir did. */
            action: components["schemas"]["ExceptionAction"];
            /**
             * Format: int32
             * @description The restart it led to (1 for the first), or the restarts made before the job failed.
             */
            attempt: number;
            class?: null | components["schemas"]["FailureClass"];
            /**
             * Format: int64
             * @description The pause before the restart (`restarted` only).
             */
            delay_ms?: number | null;
            /** @description The error and its causes (at most 4 KiB). */
            error: string;
            /** @description The node whose subtask failed, when one did. */
            node?: string | null;
            /**
             * Format: int64
             * @description Its number in the job's history (1 for the first failure ever).
             */
            seq: number;
            /**
             * Format: int32
             * @description That subtask.
             */
            subtask?: number | null;
            /**
             * Format: int64
             * @description When it happened, unix ms.
             */
            time_ms: number;
            /**
             * Format: int64
             * @description The worker it ran on, when it ran on one.
             */
            worker?: number | null;
        };
        /** @description A job as stored. */
        JobRecord: {
            /**
             * Format: int64
             * @description Creation time, unix ms.
             */
            created_ms: number;
            /**
             * Format: int64
             * @description When it last ended, unix ms.
             */
            end_ms?: number | null;
            /** @description Why it failed (or the last failure it restarted after). */
            error?: string | null;
            /** @description Its id (32 hex digits). */
            id: string;
            /** @description The spec's name. */
            name: string;
            /**
             * Format: int32
             * @description Restarts after failures, over every run.
             */
            restarts: number;
            restored_from?: null | components["schemas"]["RestoreReport"];
            /** @description The spec as submitted, with module references pinned to module ids. */
            spec: components["schemas"]["JobSpec"];
            /**
             * Format: int64
             * @description When the current run started, unix ms.
             */
            start_ms?: number | null;
            /** @description Current status. */
            status: components["schemas"]["JobStatus"];
            /**
             * Format: int32
             * @description Total subtasks.
             */
            subtasks: number;
            upgrade?: null | components["schemas"]["Upgrade"];
            /**
             * Format: int32
             * @description The version of the spec it runs (see `GET /jobs/{id}/versions`).
             */
            version: number;
        };
        /** @description A job: a graph of sources, operators and sinks, and its settings. */
        JobSpec: {
            dead_letter?: null | components["schemas"]["DeadLetterSpec"];
            /** @description The edges of the graph. */
            edges?: components["schemas"]["EdgeSpec"][];
            /** @description A human-readable name. */
            name?: string;
            /** @description The nodes of the graph. */
            nodes: components["schemas"]["NodeSpec"][];
            /** @description Job-wide settings. */
            settings?: components["schemas"]["Settings"];
        };
        /**
         * @description Where a job is in its life.
         * @enum {string}
         */
        JobStatus: "running" | "restarting" | "stopping" | "stopped" | "finished" | "canceled" | "failed";
        /** @description A job in the list, with its live throughput. */
        JobSummary: components["schemas"]["JobRecord"] & {
            /**
             * Format: double
             * @description The largest backpressure of any subtask (0 to 1).
             */
            backpressure: number;
            /**
             * Format: double
             * @description Records its sinks received per second, last second.
             */
            sink_records_per_second: number;
            /**
             * Format: double
             * @description Records its sources emitted per second, last second (0 when not running).
             */
            source_records_per_second: number;
        };
        /** @description One version of a job: the spec it ran and the modules its operators ran. */
        JobVersion: {
            /**
             * Format: int64
             * @description When it was submitted, unix ms.
             */
            created_ms: number;
            /** @description Per operator: the module it runs (its id is the SHA-256 digest of its bytes). */
            modules: components["schemas"]["VersionModule"][];
            /** @description What became of it. */
            outcome: components["schemas"]["VersionOutcome"];
            /** @description Why it was refused, rolled back or abandoned. */
            reason?: string | null;
            /** @description The savepoint it started from (an upgrade's; none for the first version). */
            savepoint?: string | null;
            /** @description The spec, with module references pinned to module ids. */
            spec: components["schemas"]["JobSpec"];
            /**
             * Format: int32
             * @description Its number (1, 2, ...).
             */
            version: number;
        };
        /**
         * @description What a tenant may do through one of the server's Kafka connections (names and prefixes
         *     only: a connection's addresses and credentials never leave the server).
         */
        KafkaGrant: {
            /** @description The connection's name (a key of the server's `kafka_connections`). */
            connection: string;
            /**
             * @description Consumer group ids and transactional ids its jobs may use: those starting with one
             *     of these (`""`: any).
             */
            group_prefixes?: string[];
            /**
             * @description Topics the tenant's jobs may read and write: those starting with one of these
             *     (`""`: every topic; none: no topic).
             */
            topic_prefixes?: string[];
        };
        /** @description A tenant's Kafka grants, as the admin sets them. */
        KafkaGrants: {
            /** @description The grants, at most one per connection (`[]`: no Kafka). */
            grants: components["schemas"]["KafkaGrant"][];
        };
        /** @description The latest checkpoints. */
        Latest: {
            completed?: null | components["schemas"]["CheckpointView"];
            failed?: null | components["schemas"]["CheckpointView"];
        };
        /**
         * @description How important a line is; `stdout` and `stderr` are what the guest wrote there.
         * @enum {string}
         */
        LogLevel: "trace" | "debug" | "info" | "warn" | "error" | "stdout" | "stderr";
        /** @description One line of an operator's log. */
        LogLine: {
            /**
             * Format: int32
             * @description The job's attempt it ran in (0: the first; one more per restart).
             */
            attempt: number;
            /** @description The level. */
            level: components["schemas"]["LogLevel"];
            /** @description The text (at most [`MAX_LOG_LINE`] bytes; longer ones are cut and end in `…`). */
            message: string;
            /** @description The operator's node. */
            node: string;
            /**
             * Format: int32
             * @description Its subtask.
             */
            subtask: number;
            /**
             * Format: int64
             * @description When, unix ms.
             */
            time_ms: number;
        };
        /** @description Minimum, average and maximum. */
        MinAvgMax: {
            /**
             * Format: double
             * @description Average.
             */
            avg: number;
            /**
             * Format: double
             * @description Maximum.
             */
            max: number;
            /**
             * Format: double
             * @description Minimum.
             */
            min: number;
        };
        /** @description An uploaded module. */
        Module: {
            /**
             * Format: int64
             * @description Upload time, unix ms.
             */
            created_ms: number;
            /** @description The component's exports. */
            exports: string[];
            /** @description The SHA-256 of its bytes (64 hex digits): its id. */
            id: string;
            /**
             * @description The name it was uploaded under; jobs may refer to it by this name (the latest upload
             *     of a name wins) or by id.
             */
            name: string;
            /**
             * Format: int64
             * @description Size in bytes.
             */
            size: number;
        };
        /** @description A record to append. */
        NewRecord: {
            /**
             * @description The key (any JSON value; absent or null for none). Keyed records go to the partition
             *     of the key's hash.
             */
            key?: Record<string, unknown> | null;
            /**
             * Format: int32
             * @description The partition (default: by key, or round robin).
             */
            partition?: number | null;
            /**
             * Format: int64
             * @description Event time, unix ms (default: now).
             */
            timestamp?: number | null;
            /** @description The value (any JSON value). */
            value: Record<string, unknown>;
        };
        /** @description A new stream. */
        NewStream: {
            /** @description Its name: 1 to 100 characters of A-Z a-z 0-9 . _ -, not starting with `.`. */
            name: string;
            /**
             * Format: int32
             * @description Its number of partitions (1 to 1024, default 1).
             */
            partitions?: number;
        };
        /** @description A new tenant. */
        NewTenant: {
            /** @description Its name: 1 to 128 characters of A-Z a-z 0-9 . _ -, not starting with `.`. */
            name: string;
            quotas?: null | components["schemas"]["Quotas"];
        };
        /** @description A token to issue (the body may be empty). */
        NewToken: {
            /** @description What it is for: 1 to 128 bytes of text (`ci`, `grafana`, ...). */
            label?: string | null;
        };
        /** @description What one node of a job would get from a savepoint. */
        NodeCheck: {
            /**
             * Format: int32
             * @description Its parallelism in the savepoint (when it had the node).
             */
            from_parallelism?: number | null;
            /**
             * @description Whether the savepoint holds state for it (keyed or operator state, timers, a source
             *     position).
             */
            has_state: boolean;
            /** @description Node id. */
            id: string;
            /** @description Operators: the new module would migrate the state. */
            migrates: boolean;
            /**
             * Format: int32
             * @description Its parallelism in the job.
             */
            parallelism: number;
            /** @description Operators: the state schema version in the savepoint and the module's. */
            state_versions?: [
                number,
                number
            ] | null;
        };
        /** @description One node of a savepoint's job. */
        NodeDescription: {
            /** @description Sources and sinks: the connector. */
            connector?: string | null;
            /** @description Node id (state is mapped by it). */
            id: string;
            /** @description Source, operator or sink. */
            kind: components["schemas"]["NodeKind"];
            /** @description Operators: the module (the id the job pinned). */
            module?: string | null;
            /**
             * Format: int32
             * @description Parallelism when the savepoint was taken.
             */
            parallelism: number;
            /**
             * Format: int32
             * @description Operators: the state schema version of the module that wrote the state.
             */
            state_version?: number | null;
        };
        /**
         * @description What a node does.
         * @enum {string}
         */
        NodeKind: "source" | "operator" | "sink";
        /** @description How one node of a new job was restored. */
        NodeRestore: {
            /**
             * Format: int32
             * @description Its parallelism in the savepoint (when it had the node).
             */
            from_parallelism?: number | null;
            /** @description Node id. */
            id: string;
            /**
             * Format: int64
             * @description Keyed entries restored.
             */
            keyed_entries: number;
            /** @description Operators: the new module migrated the state. */
            migrated: boolean;
            /**
             * Format: int32
             * @description Its parallelism in the job.
             */
            parallelism: number;
            /** @description Whether the savepoint had state for it. */
            restored: boolean;
            /** @description Operators: the state schema version in the savepoint and the module's. */
            state_versions?: [
                number,
                number
            ] | null;
        };
        /** @description One node of the graph. */
        NodeSpec: {
            /** @description Configuration handed to the operator or connector. */
            config?: Record<string, unknown>;
            /** @description For sources and sinks: the connector (`generator`, `nexmark`, `file`, `blackhole`). */
            connector?: string | null;
            /** @description The node's id, stable across versions of the job (state is mapped by it). */
            id: string;
            /**
             * @description For operators with several inputs: the names of its input ports, in the order of the
             *     input index the operator sees (e.g. `["left", "right"]` → `left` is input 0). When
             *     given, every incoming edge names its port (`input`) and every port has exactly one
             *     edge; when absent, the inputs are the incoming edges in spec order.
             */
            inputs?: string[] | null;
            /** @description Source, operator or sink. */
            kind: components["schemas"]["NodeKind"];
            /** @description For operators: the module that implements it (a path, or `builtin:<name>`). */
            module?: string | null;
            on_error?: null | components["schemas"]["OnError"];
            /**
             * Format: int32
             * @description Number of parallel subtasks.
             */
            parallelism?: number;
        };
        /**
         * @description What a node does with a record it cannot read (a source) or process (an operator).
         * @enum {string}
         */
        OnError: "fail" | "drop" | "skip" | "dead_letter";
        /** @description One operator's part of a checkpoint. */
        OperatorView: {
            /**
             * Format: int32
             * @description Subtasks that acknowledged.
             */
            acknowledged_subtasks: number;
            /** @description Alignment bytes over subtasks. */
            alignment_bytes: components["schemas"]["MinAvgMax"];
            /** @description Alignment duration over subtasks. */
            alignment_ms: components["schemas"]["MinAvgMax"];
            /** @description Async part over subtasks. */
            async_ms: components["schemas"]["MinAvgMax"];
            /**
             * Format: int64
             * @description Bytes of the whole state.
             */
            full_size: number;
            /** @description Node id. */
            id: string;
            /**
             * Format: double
             * @description Slowest subtask's end-to-end time from trigger to acknowledgement, ms.
             */
            max_end_to_end_ms: number;
            /**
             * Format: int64
             * @description Bytes of in-flight records persisted, summed over subtasks.
             */
            persisted_in_flight_bytes: number;
            /**
             * Format: int64
             * @description Bytes processed during alignment, summed over subtasks.
             */
            processed_in_flight_bytes: number;
            /** @description Start delay over subtasks. */
            start_delay_ms: components["schemas"]["MinAvgMax"];
            /**
             * Format: int64
             * @description Bytes written.
             */
            state_size: number;
            /**
             * Format: int64
             * @description When its first subtask switched from aligned to unaligned, unix ms.
             */
            switched_to_unaligned_ms?: number | null;
            /** @description Sync part over subtasks. */
            sync_ms: components["schemas"]["MinAvgMax"];
            /**
             * Format: int32
             * @description Subtasks that took the checkpoint unaligned.
             */
            unaligned_subtasks: number;
        };
        /** @description How far a Kafka source subtask is behind one partition's end. */
        PartitionLag: {
            /**
             * Format: int64
             * @description Records between the subtask's position and the partition's end.
             */
            lag: number;
            /**
             * Format: int32
             * @description The partition.
             */
            partition: number;
            /** @description The topic. */
            topic: string;
        };
        /**
         * @description How records move along an edge from the upstream subtasks to the downstream ones.
         * @enum {string}
         */
        Partitioning: "forward" | "hash" | "broadcast" | "rebalance";
        /** @description What one tenant may use. */
        Quotas: {
            /**
             * Format: int64
             * @description Bytes the channels of its jobs may hold together (each job's channels ×
             *     `channel_capacity_bytes`): the host memory its data in flight may take.
             * @default 2147483648
             */
            max_buffered_bytes?: number;
            /**
             * Format: int64
             * @description CPU time of one guest call, in milliseconds (a job's `cpu_limit_ms`).
             * @default 10000
             */
            max_cpu_ms?: number;
            /**
             * Format: int32
             * @description Jobs not yet ended (running, restarting, stopping, stopped).
             * @default 16
             */
            max_jobs?: number;
            /**
             * Format: int64
             * @description Bytes of operator log lines kept per job (the oldest go first); counted in its
             *     storage.
             * @default 1048576
             */
            max_log_bytes_per_job?: number;
            /**
             * Format: int64
             * @description Linear memory of one operator instance, in MiB (a job's `memory_limit_mb`).
             * @default 512
             */
            max_memory_mb?: number;
            /**
             * Format: int64
             * @description Size of one uploaded module, in bytes.
             * @default 33554432
             */
            max_module_bytes?: number;
            /**
             * Format: int64
             * @description Bytes stored for the tenant: modules, stream records and checkpointed state.
             * @default 4294967296
             */
            max_storage_bytes?: number;
            /**
             * Format: int32
             * @description Subtasks of those jobs together.
             * @default 64
             */
            max_subtasks?: number;
        };
        /** @description Records read. */
        ReadBody: {
            /** @description The records, keys and values decoded from MessagePack to JSON. */
            data: components["schemas"]["StoredRecord"][];
            /**
             * Format: int64
             * @description The offset to read from next.
             */
            next_offset: number;
        };
        /**
         * @description `settings.restart`: the strategy and its parameters (those of another strategy are
         *     refused).
         */
        RestartSettings: {
            /**
             * Format: int32
             * @description `fixed`: restarts before the job fails (default 3; 0: never restart). `exponential`:
             *     restarts between two resets before the job fails (default: no bound).
             * @default null
             */
            attempts?: number | null;
            /**
             * Format: int64
             * @description `fixed`, `failure_rate`: the pause before each restart (default 1,000 ms; 100 ms for a
             *     spec without `strategy`, as before).
             * @default null
             */
            delay_ms?: number | null;
            /**
             * Format: int64
             * @description `exponential`: the first delay (default 1,000 ms).
             * @default null
             */
            initial_delay_ms?: number | null;
            /**
             * Format: int64
             * @description `failure_rate`: the interval (default 60,000 ms).
             * @default null
             */
            interval_ms?: number | null;
            /**
             * Format: double
             * @description `exponential`: each delay is spread uniformly by ± this share of it (default 0.1; 0 to 1).
             * @default null
             */
            jitter?: number | null;
            /**
             * Format: int64
             * @description `exponential`: the longest delay (default 60,000 ms).
             * @default null
             */
            max_delay_ms?: number | null;
            /**
             * Format: int32
             * @description `failure_rate`: the most failures within `interval_ms` (default 1).
             * @default null
             */
            max_failures?: number | null;
            /**
             * Format: double
             * @description `exponential`: the factor from one delay to the next (default 1.5; at least 1).
             * @default null
             */
            multiplier?: number | null;
            /**
             * Format: int64
             * @description `exponential`: an attempt that runs this long without failing resets the delay and
             *     the count (default 3,600,000 ms).
             * @default null
             */
            reset_after_ms?: number | null;
            /** @default null */
            strategy?: null | components["schemas"]["RestartStrategy"];
            /**
             * Format: int64
             * @description `fixed`: count only the failures within this window (default: the job's whole life).
             * @default null
             */
            window_ms?: number | null;
        };
        /**
         * @description How a job restarts after a failure.
         * @enum {string}
         */
        RestartStrategy: "exponential" | "failure_rate" | "fixed";
        /**
         * @description What starting a job from a savepoint would do, per node, as checked before anything
         *     stops or is written ([`check_restore`](super::check_restore)).
         */
        RestoreCheck: {
            /** @description State of the savepoint that would be dropped (with `allow_non_restored_state`), described. */
            dropped: string[];
            /** @description Per node of the job, in spec order. */
            nodes: components["schemas"]["NodeCheck"][];
            /** @description The savepoint checked against. */
            savepoint: string;
        };
        /** @description What starting a job from a savepoint did, per node. */
        RestoreReport: {
            /**
             * Format: int64
             * @description The job's checkpoint that holds the restored state (its first).
             */
            checkpoint: number;
            /** @description State of the savepoint that was dropped (with `allow_non_restored_state`), described. */
            dropped: string[];
            /** @description Per node of the new job, in spec order. */
            nodes: components["schemas"]["NodeRestore"][];
            /** @description The savepoint. */
            savepoint: string;
        };
        /** @description A rotation (the body may be empty: every token of the tenant is replaced by one). */
        RotateTokens: {
            /** @description The new token's label. */
            label?: string | null;
            /** @description Replace only this token (its label passes to the new one); default: all of them. */
            token_id?: string | null;
        };
        /** @description The result of a rotation: the new token and the revoked ones (they answer 401 now). */
        Rotated: components["schemas"]["TokenBody"] & {
            /** @description The tokens revoked. */
            revoked: components["schemas"]["TokenInfo"][];
        };
        /**
         * @description What happens to the job when its savepoint is taken.
         * @enum {string}
         */
        SavepointMode: "keep_running" | "cancel" | "stop" | "drain";
        /** @description A savepoint of a tenant. */
        SavepointRecord: {
            /**
             * Format: int64
             * @description Bytes of state (keys, values and subtask blobs).
             */
            bytes: number;
            /**
             * Format: int64
             * @description The job's checkpoint it copies (once known).
             */
            checkpoint?: number | null;
            /**
             * Format: int64
             * @description When it completed or failed, unix ms.
             */
            completed_ms?: number | null;
            /**
             * Format: int64
             * @description When it was triggered (or imported), unix ms.
             */
            created_ms: number;
            description?: null | components["schemas"]["Description"];
            /**
             * Format: int64
             * @description Keyed and operator state entries.
             */
            entries: number;
            /** @description Why it failed. */
            error?: string | null;
            /** @description Its id (32 hex digits). */
            id: string;
            /** @description The job it was taken from (for an imported one: the job on the server it came from). */
            job: string;
            /** @description The job's name. */
            job_name: string;
            mode?: null | components["schemas"]["SavepointMode"];
            /** @description Imported: the id it had on the server it was exported from. */
            origin?: string | null;
            /** @description Pending, completed or failed. */
            status: components["schemas"]["SavepointStatus"];
        };
        /**
         * @description Where a savepoint is in its life.
         * @enum {string}
         */
        SavepointStatus: "pending" | "completed" | "failed";
        /** @description One of the server's Kafka connections, as the admin sees it (no secret). */
        ServerKafkaConnection: {
            /** @description `host:port` of its brokers. */
            bootstrap_servers: string[];
            /** @description The names of the tenants granted it, in name order. */
            granted_to: string[];
            /** @description Its name (tenants' grants and jobs' `connection` name it). */
            name: string;
            /** @description The SASL mechanism, for the `sasl_*` protocols. */
            sasl_mechanism?: string | null;
            /** @description The SASL user (never the password). */
            sasl_username?: string | null;
            /** @description `plaintext`, `ssl`, `sasl_plaintext` or `sasl_ssl`. */
            security_protocol: string;
            /** @description A CA or client certificate file is set (their paths and the key are not shown). */
            tls_files: boolean;
        };
        /** @description Job-wide settings. */
        Settings: {
            /**
             * @description Capacity of every channel, in messages (batches). Backpressure starts when full.
             * @default 8
             */
            channel_capacity?: number;
            /**
             * Format: int64
             * @description Capacity of every channel between subtasks of one process, in bytes of the batches
             *     queued (keys and values): backpressure starts when either capacity is reached, so a
             *     channel of large records holds fewer of them. A task queues one call's output past
             *     it. Channels to another worker count batches only.
             * @default 8388608
             */
            channel_capacity_bytes?: number;
            /**
             * @default {
             *       "aligned_timeout_ms": null,
             *       "interval_ms": 1000,
             *       "max_chain_length": 8,
             *       "max_concurrent": 1,
             *       "min_pause_ms": 0,
             *       "mode": "aligned",
             *       "retained": 2,
             *       "timeout_ms": 60000,
             *       "tolerable_failures": 3
             *     }
             */
            checkpoint?: components["schemas"]["CheckpointSettings"];
            /**
             * Format: int64
             * @description CPU time one guest call may take, in milliseconds, before it is stopped.
             * @default 10000
             */
            cpu_limit_ms?: number;
            /**
             * Format: int64
             * @description Records one node may drop, skip or dead-letter in any minute; one more fails the job
             *     (a bug that turns every record into a dead letter ends it, with an error that says so).
             * @default 1000
             */
            max_dead_letters_per_minute?: number;
            /**
             * Format: int64
             * @description Output one guest call may return, in bytes: its records' key and value bytes plus 16
             *     bytes per record. A call that returns more fails the job.
             * @default 67108864
             */
            max_output_bytes_per_call?: number;
            /**
             * Format: int32
             * @description Number of key groups (the largest parallelism keyed state can be rescaled to).
             * @default 128
             */
            max_parallelism?: number;
            /**
             * Format: int64
             * @description Linear memory one operator instance may use, in MiB.
             * @default 512
             */
            memory_limit_mb?: number;
            /** @default {} */
            restart?: components["schemas"]["RestartSettings"];
            /**
             * Format: int64
             * @description Wall-clock time one guest call may take, in milliseconds, waiting included (a guest
             *     that sleeps or polls never uses up its CPU limit); at least `cpu_limit_ms`.
             * @default 60000
             */
            wall_limit_ms?: number;
        };
        /** @description One state entry. */
        StateItem: {
            /**
             * @description Host keyed state: the entry's field within its record key, decoded likewise (absent
             *     for the empty field and for guest state).
             */
            field?: unknown;
            /**
             * @description The key, decoded from MessagePack (`{"hex": ...}` when it is not MessagePack). For
             *     host keyed state (a state named `@host/<name>`), the record key.
             */
            key: unknown;
            /**
             * Format: int32
             * @description Keyed state: its key group.
             */
            key_group?: number | null;
            /** @description The state's name. */
            state: string;
            /**
             * Format: int32
             * @description Operator (non-keyed) state: the subtask it belongs to.
             */
            subtask?: number | null;
            /** @description The value, decoded likewise. */
            value: unknown;
        };
        /** @description A page of an operator's state. */
        StatePage: {
            /** @description The entries, by key group (then operator state by subtask), then state name and key. */
            data: components["schemas"]["StateItem"][];
            /** @description The cursor of the next page; absent on the last. */
            next?: string | null;
            /** @description The operator. */
            operator: string;
        };
        /** @description One kept line: its number in the job's log and the line. */
        StoredLine: components["schemas"]["LogLine"] & {
            /**
             * Format: int64
             * @description Its number in the job's log (1 for the first line ever; never reused).
             */
            seq: number;
        };
        /** @description A stored record. */
        StoredRecord: {
            /** @description The key as JSON (null for none). */
            key: Record<string, unknown> | null;
            /**
             * Format: int64
             * @description Its offset in the partition.
             */
            offset: number;
            /**
             * Format: int32
             * @description Its partition.
             */
            partition: number;
            /**
             * Format: int64
             * @description Event time, unix ms.
             */
            timestamp: number;
            /** @description The value as JSON. */
            value: Record<string, unknown>;
        };
        /** @description A stream. */
        StreamInfo: {
            /** @description The next offset of every partition (records so far). */
            end_offsets: number[];
            /** @description Its name. */
            name: string;
            /**
             * Format: int32
             * @description Number of partitions.
             */
            partitions: number;
        };
        /** @description Live figures of one subtask. */
        SubtaskLive: {
            /**
             * Format: double
             * @description Share of the last second spent waiting for room downstream (0 to 1).
             */
            backpressure: number;
            /**
             * Format: double
             * @description Share of the last second spent on records (0 to 1): a source reading them, an
             *     operator's guest calls on them, a sink writing them.
             */
            busy?: number;
            /**
             * Format: int64
             * @description How far its event time is behind the clock (now − watermark), ms; absent without a
             *     watermark or once its input ended.
             */
            event_time_lag_ms?: number | null;
            /** @description Its output is idle (every input idle; a source: no data for its idle timeout). */
            idle?: boolean;
            /** @description A Kafka source's lag per partition it reads (records behind the partition's end). */
            kafka_lag?: components["schemas"]["PartitionLag"][];
            /**
             * Format: int64
             * @description Records received in this run.
             */
            records_in: number;
            /**
             * Format: double
             * @description Records received per second (last second).
             */
            records_in_per_second: number;
            /**
             * Format: int64
             * @description Records emitted in this run.
             */
            records_out: number;
            /**
             * Format: double
             * @description Records emitted per second (last second).
             */
            records_out_per_second: number;
            /**
             * Format: int32
             * @description Subtask index.
             */
            subtask: number;
            /**
             * Format: int64
             * @description The event-time watermark it last sent downstream, unix ms; absent before the first
             *     (a source without event time sends none until its input ends).
             */
            watermark_ms?: number | null;
            /**
             * Format: int64
             * @description The worker that runs it (its id in `/api/v1/workers`); absent when it runs in the
             *     server's own process.
             */
            worker?: number | null;
        };
        /** @description Statistics of one subtask's part of a checkpoint. */
        SubtaskView: {
            /**
             * Format: int64
             * @description Acknowledgement time, unix ms.
             */
            ack_time_ms: number;
            /**
             * Format: int64
             * @description Bytes processed during alignment.
             */
            alignment_bytes: number;
            /**
             * Format: double
             * @description Alignment duration, ms.
             */
            alignment_ms: number;
            /**
             * Format: double
             * @description Asynchronous part (writing to the store), ms.
             */
            async_ms: number;
            /**
             * Format: int64
             * @description Bytes of the subtask's whole state.
             */
            full_state_bytes: number;
            /** @description Node id. */
            operator: string;
            /**
             * Format: int64
             * @description Bytes of in-flight records it persisted as channel state.
             */
            persisted_in_flight_bytes: number;
            /**
             * Format: int64
             * @description The same as `alignment_bytes`, under Flink's name.
             */
            processed_in_flight_bytes: number;
            /**
             * Format: double
             * @description From the trigger to the first barrier's arrival, ms.
             */
            start_delay_ms: number;
            /**
             * Format: int64
             * @description Bytes written.
             */
            state_bytes: number;
            /**
             * Format: int32
             * @description Subtask index.
             */
            subtask: number;
            /**
             * Format: int64
             * @description When it switched from aligned to unaligned, unix ms (none when it did not switch).
             */
            switched_to_unaligned_ms?: number | null;
            /**
             * Format: double
             * @description Synchronous part (the snapshot on the processing path), ms.
             */
            sync_ms: number;
            /**
             * @description It took the checkpoint unaligned: its barrier overtook in-flight records, persisted
             *     with the checkpoint.
             */
            unaligned: boolean;
        };
        /** @description Summary over the completed checkpoints. */
        Summary: {
            /** @description Bytes processed during alignment. */
            alignment_bytes: components["schemas"]["MinAvgMax"];
            /** @description End-to-end duration, ms. */
            duration_ms: components["schemas"]["MinAvgMax"];
            /** @description Full size, bytes. */
            full_size: components["schemas"]["MinAvgMax"];
            /** @description Longest alignment of a subtask, ms. */
            max_alignment_ms: components["schemas"]["MinAvgMax"];
            /** @description Bytes of in-flight records persisted with the checkpoint. */
            persisted_in_flight_bytes: components["schemas"]["MinAvgMax"];
            /** @description Incremental size, bytes. */
            state_size: components["schemas"]["MinAvgMax"];
        };
        /** @description A tenant. */
        Tenant: {
            /**
             * Format: int64
             * @description Creation time, unix ms.
             */
            created_ms: number;
            /**
             * Format: int64
             * @description When the admin disabled it, unix ms; `null` while it is enabled. A disabled
             *     tenant's requests answer 403, its jobs are stopped and its data kept.
             */
            disabled_ms?: number | null;
            /** @description Its id (16 hex digits). */
            id: string;
            /**
             * @description The server's Kafka connections its jobs may use, and what through each (none: no
             *     Kafka). Set by the admin (`PUT /api/v1/tenants/{tenant_id}/kafka`).
             */
            kafka: components["schemas"]["KafkaGrant"][];
            /**
             * @description The tenant may issue and revoke its own tokens (`/api/v1/tenant/tokens`). Set by the
             *     admin (`PUT /api/v1/tenants/{tenant_id}/settings`).
             */
            manage_own_tokens?: boolean;
            /** @description Its name. */
            name: string;
            /** @description Its quotas. */
            quotas: components["schemas"]["Quotas"];
            /** @description Jobs that were running when it was disabled; enabling resumes them. */
            suspended_jobs: string[];
        };
        /** @description What the admin lets a tenant do itself. */
        TenantSettings: {
            /** @description The tenant may issue and revoke its own tokens. */
            manage_own_tokens: boolean;
        };
        /** @description The caller's tenant, its quotas and usage. */
        TenantView: components["schemas"]["Tenant"] & {
            /** @description Its usage. */
            usage: components["schemas"]["Usage"];
        };
        /** @description A tenant with a token. */
        TenantWithToken: {
            /** @description The tenant. */
            tenant: components["schemas"]["Tenant"];
            /** @description A bearer token for it. It is shown only now; the server keeps only its hash. */
            token: string;
        };
        /** @description A new token. */
        TokenBody: {
            /**
             * Format: int64
             * @description When it was issued, unix ms.
             */
            created_ms: number;
            /** @description Its id (16 hex digits), to list and revoke it. */
            id: string;
            /** @description What it is for. */
            label?: string | null;
            /** @description A bearer token. It is shown only now; the server keeps only its hash. */
            token: string;
        };
        /** @description A token as listed: its id, label and creation time, never the token itself. */
        TokenInfo: {
            /**
             * Format: int64
             * @description When it was issued, unix ms (a token from before token ids: its tenant's creation).
             */
            created_ms: number;
            /** @description Its id (16 hex digits). */
            id: string;
            /** @description What it is for. */
            label?: string | null;
        };
        /** @description How to take a savepoint. */
        TriggerSavepoint: {
            /**
             * @description What happens to the job: `keep_running` (default), `cancel`, `stop`, or `drain`
             *     (stop with drain: the pipeline empties and the job finishes).
             */
            mode?: components["schemas"]["SavepointMode"];
        };
        /** @description A triggered checkpoint. */
        Triggered: {
            /**
             * Format: int64
             * @description Its id: poll `GET .../checkpoints/{id}` for its status.
             */
            id: number;
        };
        /** @description An upgrade in progress. */
        Upgrade: {
            /** @description Whether state without a place in the new version is dropped. */
            allow_non_restored_state: boolean;
            /**
             * Format: int32
             * @description The version it upgrades from.
             */
            from_version: number;
            /**
             * Format: int64
             * @description The probation after the new version started, ms.
             */
            grace_period_ms: number;
            /** @description Where it is. */
            phase: components["schemas"]["UpgradePhase"];
            /**
             * Format: int64
             * @description When the probation ends (unix ms), once it began.
             */
            probation_until_ms?: number | null;
            /**
             * Format: int64
             * @description The checkpoint the new version started from (written from the savepoint).
             */
            restore_checkpoint?: number | null;
            /** @description Why it is rolling back. */
            rollback_reason?: string | null;
            /** @description The savepoint the old version stops at (once taken; both versions start from it). */
            savepoint?: string | null;
            /**
             * Format: int64
             * @description When it began, unix ms.
             */
            started_ms: number;
            /**
             * Format: int32
             * @description The version it upgrades to.
             */
            to_version: number;
        };
        /** @description The answer to an upgrade: what the check before it found, and the job. */
        UpgradeAnswer: {
            /** @description What the check found. */
            check: components["schemas"]["UpgradeCheck"];
            /** @description Only the check was made. */
            dry_run: boolean;
            /** @description The job (on probation in its new version, or rolled back already). */
            job: components["schemas"]["JobDetail"];
        };
        /** @description What the check before an upgrade found. */
        UpgradeCheck: {
            /** @description What each node gets from the savepoint the check took. */
            check: components["schemas"]["RestoreCheck"];
            /**
             * Format: int32
             * @description The version the job runs.
             */
            from_version: number;
            /** @description The new spec, with module references pinned to module ids. */
            spec: components["schemas"]["JobSpec"];
            /**
             * Format: int32
             * @description The number the new version gets.
             */
            to_version: number;
        };
        /**
         * @description Where an upgrade is.
         * @enum {string}
         */
        UpgradePhase: "stopping" | "restoring" | "probation" | "rolling_back";
        /**
         * @description What an upgrade asks for: a new spec, or the current one with new modules and
         *     parallelism. Node ids carry state over, as when a job starts from a savepoint.
         */
        UpgradeRequest: {
            /** @description Drop the savepoint's state that has no place in the new version instead of refusing. */
            allow_non_restored_state?: boolean;
            /**
             * @description Drain the old version (every event-time timer fires) instead of stopping it. Its
             *     windows fire early: for an event-time job that reads on, stop (the default).
             */
            drain?: boolean;
            /** @description Only check: take a savepoint, check it against the new version, delete it, answer. */
            dry_run?: boolean;
            /**
             * Format: int64
             * @description Probation of the new version, ms (default 10 000, at most 600 000): it takes no
             *     checkpoint, and a failure rolls it back to the old version.
             */
            grace_period_ms?: number | null;
            /**
             * @description New modules by operator id (a module id, the name it was uploaded under, or
             *     `builtin:<name>`).
             */
            modules?: {
                [key: string]: string;
            };
            /** @description New parallelism by node id. */
            parallelism?: {
                [key: string]: number;
            };
            spec?: null | components["schemas"]["JobSpec"];
        };
        /** @description The multipart form of an upload. */
        UploadForm: {
            /**
             * Format: binary
             * @description The component (`.wasm`).
             */
            file: string;
            /** @description Its name (default: the file name without `.wasm`). */
            name?: string | null;
        };
        /** @description What a tenant uses of its quotas. */
        Usage: {
            /**
             * Format: int64
             * @description Bytes their channels may hold.
             */
            buffered_bytes: number;
            /**
             * Format: int32
             * @description Jobs that count against `max_jobs`.
             */
            jobs: number;
            /**
             * Format: int64
             * @description Bytes stored.
             */
            storage_bytes: number;
            /**
             * Format: int32
             * @description Their subtasks.
             */
            subtasks: number;
        };
        /** @description The module of one operator in a version. */
        VersionModule: {
            /** @description The module id: the hex SHA-256 digest of its bytes. */
            digest: string;
            /** @description The name it was uploaded under (when it was known). */
            name?: string | null;
            /** @description The operator's node id. */
            node: string;
        };
        /**
         * @description What became of a version of a job.
         * @enum {string}
         */
        VersionOutcome: "current" | "upgrading" | "replaced" | "rolled_back" | "abandoned";
        /** @description A node of the job's graph with its live figures (zero when the job is not running). */
        Vertex: {
            /**
             * Format: double
             * @description The largest share of the last second a subtask waited for room downstream (0 to 1).
             */
            backpressure: number;
            /** @description Sources and sinks: the connector. */
            connector?: string | null;
            /** @description Node id. */
            id: string;
            /** @description Source, operator or sink. */
            kind: components["schemas"]["NodeKind"];
            /** @description Operators: the module id (or builtin name). */
            module?: string | null;
            /**
             * Format: int32
             * @description Parallelism.
             */
            parallelism: number;
            /**
             * Format: int64
             * @description Records received in the current run.
             */
            records_in: number;
            /**
             * Format: double
             * @description Records received per second.
             */
            records_in_per_second: number;
            /**
             * Format: int64
             * @description Records emitted in the current run.
             */
            records_out: number;
            /**
             * Format: double
             * @description Records emitted per second.
             */
            records_out_per_second: number;
            /** @description Per subtask. */
            subtasks: components["schemas"]["SubtaskLive"][];
        };
        /** @description A worker registered with this server (`weir worker`), live or lost. */
        Worker: {
            /** @description Where other workers reach its data plane. */
            data_addr: string;
            /**
             * Format: int64
             * @description Milliseconds since its last heartbeat (for a lost worker: when it was lost).
             */
            heartbeat_age_ms: number;
            /**
             * Format: int64
             * @description Its id: one per session (a worker that registers again gets a new one).
             */
            id: number;
            /**
             * @description Why it was lost: `no heartbeat for … ms`, `the session closed`, `left: …`,
             *     `replaced by a new session of the same worker`; `null` while live.
             */
            lost_reason?: string | null;
            /** @description Its name (a pod or host name). */
            name: string;
            /** @description Where its control session comes from. */
            peer: string;
            /**
             * Format: int64
             * @description When it registered, unix ms.
             */
            registered_ms: number;
            /**
             * Format: int32
             * @description Subtasks it runs at once.
             */
            slots: number;
            /** @description `live`, or `lost` (see `lost_reason`). */
            status: string;
            /**
             * Format: int32
             * @description Subtasks of running jobs it runs now (0 for a lost worker).
             */
            subtasks: number;
            /**
             * Format: int32
             * @description Slots reserved for jobs' running attempts.
             */
            used_slots: number;
            /** @description Its build (`weir` version). */
            version: string;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    list_jobs: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The jobs */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_JobSummary"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_job: {
        parameters: {
            query?: {
                /**
                 * @description Start from this savepoint of the caller: its state is mapped onto the job by node id
                 *     (keyed state redistributed by key group when a parallelism changed; a changed module
                 *     migrates it or is refused).
                 */
                from_savepoint?: string;
                /**
                 * @description With `from_savepoint`: start even if some of the savepoint's state has no place in
                 *     the job (it is dropped).
                 */
                allow_non_restored_state?: boolean;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description A job spec */
        requestBody: {
            content: {
                "application/json": components["schemas"]["JobSpec"];
            };
        };
        responses: {
            /** @description Created and started */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["JobDetail"];
                };
            };
            /** @description Invalid spec, or a savepoint that does not fit the job */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such savepoint */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The savepoint is not completed */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The job's module failed to migrate the savepoint's state */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A quota would be exceeded */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The server's disk is nearly full */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_job: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Job id */
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The job */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["JobDetail"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    cancel_job: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Job id */
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Canceled */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["JobRecord"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The job has ended */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_checkpoints: {
        parameters: {
            query?: {
                /** @description Most checkpoints listed, newest first (default 100, at most 100000). */
                limit?: number | null;
            };
            header?: never;
            path: {
                /** @description Job id */
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description History */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["History"];
                };
            };
            /** @description Bad query */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    trigger_checkpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Job id */
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Triggered */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Triggered"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not running, or too many checkpoints in progress */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_checkpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Job id */
                job_id: string;
                /** @description Checkpoint id */
                checkpoint_id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The checkpoint */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckpointDetail"];
                };
            };
            /** @description An id that is not UTF-8 */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job or checkpoint */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    checkpoint_state: {
        parameters: {
            query?: {
                /** @description Only entries of this named state. */
                state?: string;
                /** @description Where to continue: the `next` of the previous page. */
                cursor?: string;
                /** @description Entries per page (default 100, at most 1000). */
                limit?: number;
            };
            header?: never;
            path: {
                /** @description Job id */
                job_id: string;
                /** @description Checkpoint id */
                checkpoint_id: number;
                /** @description Node id */
                operator: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of state */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StatePage"];
                };
            };
            /** @description A malformed cursor */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job, checkpoint or operator */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The checkpoint is not completed or no longer retained */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_job_exceptions: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Job id */
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The failures, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_JobException"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_job_logs: {
        parameters: {
            query?: {
                /** @description Only this node's lines. */
                node?: string;
                /** @description Only this subtask's. */
                subtask?: number;
                /**
                 * @description Only lines at least this important (`trace` … `error`; `stdout` ranks as `info`,
                 *     `stderr` as `warn`).
                 */
                level?: components["schemas"]["LogLevel"];
                /** @description Only lines after this number (`seq`): where the last answer ended. */
                after?: number;
                /** @description Only lines at or after this time (unix ms). */
                since_ms?: number;
                /** @description Most lines (default 1,000, at most 10,000); oldest first. */
                limit?: number;
                /**
                 * @description Stream the lines so far and then new ones as server-sent events (`text/event-stream`,
                 *     one `line` event per line, its data the line as JSON) until the client leaves.
                 */
                follow?: boolean;
            };
            header?: never;
            path: {
                /** @description Job id */
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The lines, oldest first (with `follow`: `text/event-stream`) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_StoredLine"];
                };
            };
            /** @description Bad query */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    restart_job: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Job id */
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Restarted */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["JobRecord"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The job finished */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A quota would be exceeded */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_job_savepoints: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Job id */
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The job's savepoints */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_SavepointRecord"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    trigger_savepoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Job id */
                job_id: string;
            };
            cookie?: never;
        };
        /** @description Optional: the mode */
        requestBody: {
            content: {
                "application/json": components["schemas"]["TriggerSavepoint"];
            };
        };
        responses: {
            /** @description Triggered (pending), or completed for a job that is not running */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SavepointRecord"];
                };
            };
            /** @description A bad body */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The job cannot give a savepoint now */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The storage quota is used up */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The server's disk is nearly full */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    stop_job: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Job id */
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Stopping */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["JobRecord"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The job is not running */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    upgrade_job: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Job id */
                job_id: string;
            };
            cookie?: never;
        };
        /** @description The new version */
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpgradeRequest"];
            };
        };
        responses: {
            /** @description The check's answer (dry run): nothing changed */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UpgradeAnswer"];
                };
            };
            /** @description The new version runs on probation (or was rolled back: see the job) */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UpgradeAnswer"];
                };
            };
            /** @description Invalid spec or changes */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The job is not running, is being upgraded, or its savepoint failed */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The new version cannot take the job's state; nothing was stopped */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A quota would be exceeded */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The server's disk is nearly full */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_job_versions: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Job id */
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The versions */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_JobVersion"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_kafka_connections: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The connections granted to the caller */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_KafkaGrant"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_server_kafka_connections: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The server's connections */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_ServerKafkaConnection"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not the admin token */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    tenant_metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Prometheus text exposition (`text/plain; version=0.0.4`) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_modules: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The modules */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_Module"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    upload_module: {
        parameters: {
            query?: {
                /** @description The module's name (raw uploads; multipart uploads may give it as a field). */
                name?: string | null;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/wasm": number[];
                "multipart/form-data": components["schemas"]["UploadForm"];
            };
        };
        responses: {
            /** @description The same bytes were uploaded before */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Module"];
                };
            };
            /** @description Uploaded */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Module"];
                };
            };
            /** @description Bad form or name */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Larger than the tenant's max_module_bytes or the server's limit */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not a component of the weir:operator world */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Storage quota, or the tenant's or server's compilations at once (max_compiles_per_tenant, max_compiles) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The server's disk is nearly full */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_module: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Module id (SHA-256, hex) */
                module_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The module */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Module"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such module */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_module: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Module id (SHA-256, hex) */
                module_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such module */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A job uses it */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_savepoints: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The savepoints */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_SavepointRecord"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    import_savepoint: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description A savepoint file */
        requestBody: {
            content: {
                "application/octet-stream": number[];
            };
        };
        responses: {
            /** @description Imported */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SavepointRecord"];
                };
            };
            /** @description Not a valid savepoint file */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The storage quota would be exceeded */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The server's disk is nearly full */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_savepoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Savepoint id */
                savepoint_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The savepoint */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SavepointRecord"];
                };
            };
            /** @description A malformed id */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such savepoint */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_savepoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Savepoint id */
                savepoint_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A malformed id */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such savepoint */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The savepoint is pending */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    export_savepoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Savepoint id */
                savepoint_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The savepoint file */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/octet-stream": number[];
                };
            };
            /** @description A malformed id */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such savepoint */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The savepoint is not completed */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No room in the storage quota for the spooled file */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The server's disk is nearly full */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    savepoint_state: {
        parameters: {
            query?: {
                /** @description Only entries of this named state. */
                state?: string;
                /** @description Where to continue: the `next` of the previous page. */
                cursor?: string;
                /** @description Entries per page (default 100, at most 1000). */
                limit?: number;
            };
            header?: never;
            path: {
                /** @description Savepoint id */
                savepoint_id: string;
                /** @description Node id */
                operator: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of state */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StatePage"];
                };
            };
            /** @description A malformed id or cursor */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such savepoint or operator */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The savepoint is not completed */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_streams: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The streams */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_StreamInfo"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_stream: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewStream"];
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StreamInfo"];
                };
            };
            /** @description Bad name or partition count */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description It exists with another partition count */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_stream: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Stream name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The stream */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StreamInfo"];
                };
            };
            /** @description Bad name */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such stream */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    read_records: {
        parameters: {
            query?: {
                /** @description The partition (default 0). */
                partition?: number | null;
                /** @description The first offset (default 0). */
                offset?: number | null;
                /** @description Most records (default 1000, at most 10000). */
                limit?: number | null;
            };
            header?: never;
            path: {
                /** @description Stream name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Records */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReadBody"];
                };
            };
            /** @description Bad partition or query */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such stream */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    append_records: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Stream name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AppendBody"];
                "application/msgpack": components["schemas"]["AppendBody"];
            };
        };
        responses: {
            /** @description Where each record went */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_Appended"];
                };
            };
            /** @description Bad body or partition */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such stream */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Storage quota */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The server's disk is nearly full */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    whoami: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller's tenant */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TenantView"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_own_tokens: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tokens, oldest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_TokenInfo"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    issue_own_token: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description Optional: the token's label */
        requestBody?: {
            content: {
                "application/json": null | components["schemas"]["NewToken"];
            };
        };
        responses: {
            /** @description The token */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TokenBody"];
                };
            };
            /** @description Bad body or label */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The admin does not let this tenant manage its tokens */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant holds the most tokens it may */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    revoke_own_token: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Token id */
                token_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The revoked token */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TokenInfo"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The admin does not let this tenant manage its tokens */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such token of this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_tenants: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tenants */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_Tenant"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not the admin token */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_tenant: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewTenant"];
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TenantWithToken"];
                };
            };
            /** @description Bad name or body */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not the admin token */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The name is taken */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_tenant: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Tenant id */
                tenant_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tenant, with its usage */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TenantView"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not the admin token */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    disable_tenant: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Tenant id */
                tenant_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tenant, disabled */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tenant"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not the admin token */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    enable_tenant: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Tenant id */
                tenant_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tenant, enabled */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tenant"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not the admin token */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    set_kafka_grants: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Tenant id */
                tenant_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["KafkaGrants"];
            };
        };
        responses: {
            /** @description The tenant */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tenant"];
                };
            };
            /** @description Bad body, or a connection the server does not have */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not the admin token */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    set_quotas: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Tenant id */
                tenant_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["Quotas"];
            };
        };
        responses: {
            /** @description The tenant */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tenant"];
                };
            };
            /** @description Bad body */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not the admin token */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    set_settings: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Tenant id */
                tenant_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TenantSettings"];
            };
        };
        responses: {
            /** @description The tenant */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tenant"];
                };
            };
            /** @description Bad body */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not the admin token */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_tokens: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Tenant id */
                tenant_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tokens, oldest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_TokenInfo"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not the admin token */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    issue_token: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Tenant id */
                tenant_id: string;
            };
            cookie?: never;
        };
        /** @description Optional: the token's label */
        requestBody?: {
            content: {
                "application/json": null | components["schemas"]["NewToken"];
            };
        };
        responses: {
            /** @description The token */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TokenBody"];
                };
            };
            /** @description Bad body or label */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not the admin token */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The tenant holds the most tokens it may */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    rotate_tokens: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Tenant id */
                tenant_id: string;
            };
            cookie?: never;
        };
        /** @description Optional: which token, and the new label */
        requestBody?: {
            content: {
                "application/json": null | components["schemas"]["RotateTokens"];
            };
        };
        responses: {
            /** @description The new token and the revoked ones */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Rotated"];
                };
            };
            /** @description Bad body or label */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not the admin token */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such tenant or token */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    revoke_token: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Tenant id */
                tenant_id: string;
                /** @description Token id */
                token_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The revoked token */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TokenInfo"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not the admin token */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such tenant or token */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_workers: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The workers */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Data_Worker"];
                };
            };
            /** @description No or bad token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not the admin token */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    health: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The server serves */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            /** @description The store cannot serve: it is being reopened */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
        };
    };
}
