"""What-if simulation: a scenario (cluster, scheduler configurations, a stream of jobs, failures) run
in virtual time with phalanx's real components, and the reports people decide on.

`phalanx simulate SCENARIO.yaml` is the entry point. The stream's unit is `jobs.JobArrival`, which
inline templates, generators and trace readers (`traces/`) all produce.
"""
