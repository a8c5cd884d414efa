"""The Job controller, one idea a module: `controller` (informers, the sync, pods), `status`
(counting finished pods, finalizers, conditions into status), `conditions`, `indexes` (Indexed
completion), `backoff`, `pod_failure_policy`, `success_policy`, `workload` (WorkloadWithJob) and
`util` (the names and small reads they share)."""
