"""A Lease lock for kubernetes.leaderelection, written as upstream's later
kubernetes/leaderelection/resourcelock/leaselock.py works: the election
record is the Lease's spec (holderIdentity, leaseDurationSeconds,
acquireTime, renewTime), and every write is a replace carrying the
resourceVersion that was read, so two candidates never both win.

Debian's python3-kubernetes 22.6 ships only ConfigMapLock; this is the
small version a user of that package writes.
"""
from datetime import datetime, timezone

from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.leaderelection.leaderelectionrecord import LeaderElectionRecord


class LeaseLock:
    def __init__(self, name, namespace, identity):
        self.name = name
        self.namespace = namespace
        self.identity = str(identity)
        self.api = client.CoordinationV1Api()
        self.lease = None  # the Lease last read, whose resourceVersion updates carry

    def get(self, name, namespace):
        """(True, record) when the Lease exists, else (False, the ApiException)."""
        try:
            self.lease = self.api.read_namespaced_lease(name, namespace)
        except ApiException as e:
            return False, e
        s = self.lease.spec
        return True, LeaderElectionRecord(
            s.holder_identity,
            None if s.lease_duration_seconds is None else str(s.lease_duration_seconds),
            None if s.acquire_time is None else str(s.acquire_time),
            None if s.renew_time is None else str(s.renew_time))

    def create(self, name, namespace, election_record):
        body = client.V1Lease(metadata=client.V1ObjectMeta(name=name), spec=self._spec(election_record))
        try:
            self.lease = self.api.create_namespaced_lease(namespace, body)
            return True
        except ApiException:
            return False

    def update(self, name, namespace, updated_record):
        if self.lease is None:
            return False
        self.lease.spec = self._spec(updated_record)
        try:
            self.lease = self.api.replace_namespaced_lease(name, namespace, self.lease)
            return True
        except ApiException:
            return False

    @staticmethod
    def _spec(record):
        return client.V1LeaseSpec(
            holder_identity=record.holder_identity,
            lease_duration_seconds=int(record.lease_duration),
            acquire_time=_time(record.acquire_time),
            renew_time=_time(record.renew_time))


def _time(s):
    """The record keeps str(datetime); the Lease wants an aware time."""
    t = datetime.fromisoformat(s)
    return t.astimezone(timezone.utc) if t.tzinfo is None else t
