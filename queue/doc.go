// Package queue owns skillfleet's JetStream topology: the jobs work queue with its two priority
// lanes, the results stream, the run-state KV bucket, the rate budgets' KV bucket and the bundle
// object store; the connections to NATS; and the embedded nats-server of local mode and tests.
//
// It is a leaf: it deals in subjects, ids and bytes, and knows nothing of the wire contract's
// messages. The delivery rules it implements (see DESIGN.md, Reliability) are:
//
//   - A job is published once per run and job id (deduplicated within JobsDuplicates) on
//     skillfleet.jobs.<lane>.<run>; a worker takes one per free slot (LaneConsumer.Fetch: one pull
//     request for as many jobs as it has free slots), heartbeats it
//     every Config.HeartbeatInterval, publishes its result, then acks it.
//   - A job not acked within AckWait is redelivered, up to MaxDeliver deliveries. On the last
//     one (Attempt) the worker records a failure itself and terminates the message: the server
//     stops delivering it but does not remove it.
//   - A result is published once per run, job and attempt (deduplicated within
//     ResultsDuplicates) on skillfleet.results.<run>, and kept for ResultsMaxAge.
package queue
