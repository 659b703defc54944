"""One leader-election candidate using the Python client's own module.

Usage: /usr/bin/python3 elector.py configmap|lease NAME IDENTITY

Prints "LEADING IDENTITY" once it leads and keeps leading until killed;
the Go test kills the leader and waits for another candidate to print it.
Short timings (lease 4 s, renew deadline 3 s, retry 1 s) keep failover fast.
"""
import sys
import threading

from kubernetes import config
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.configmaplock import ConfigMapLock

from leaselock import LeaseLock


def main():
    kind, name, identity = sys.argv[1:4]
    config.load_kube_config()
    lock = (ConfigMapLock if kind == "configmap" else LeaseLock)(name, "default", identity)
    stop = threading.Event()

    def lead():
        print("LEADING", identity, flush=True)
        stop.wait()

    cfg = electionconfig.Config(lock, lease_duration=4, renew_deadline=3, retry_period=1,
                                onstarted_leading=lead, onstopped_leading=stop.set)
    leaderelection.LeaderElection(cfg).run()
    print("STOPPED", identity, flush=True)
    stop.set()


if __name__ == "__main__":
    main()
