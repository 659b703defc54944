package leasecopy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// EtcdConfig names the etcd a kube-apiserver keeps its leases in, with
// kube-apiserver's flag meanings.
type EtcdConfig struct {
	Endpoints []string
	// Prefix is --etcd-prefix: leases live under Prefix/leases/NS/NAME
	// (empty means /registry).
	Prefix                    string
	CAFile, CertFile, KeyFile string
	// DialTimeout bounds connecting (default 10 s).
	DialTimeout time.Duration
}

// etcdTarget writes leases into etcd as kube-apiserver stores them: the
// protobuf envelope ("k8s\x00", then a runtime.Unknown naming
// coordination.k8s.io/v1 Lease) without a resourceVersion (the mod
// revision is the resourceVersion), at PREFIX/leases/NS/NAME.
type etcdTarget struct {
	client *clientv3.Client
	prefix string
	enc    runtime.Encoder
	dec    runtime.Decoder
	seen   lastSeen[stored]
}

// stored is a lease as etcd holds it: its mod revision (0: no such key)
// and its object.
type stored struct {
	modRevision int64
	lease       *coordinationv1.Lease
}

// encryptedPrefix starts a value kube-apiserver encrypted at rest; the copy
// cannot read or write those.
var encryptedPrefix = []byte("k8s:enc:")

// NewEtcdTarget connects to the etcd cfg names and checks that it answers.
func NewEtcdTarget(ctx context.Context, cfg EtcdConfig) (Target, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("no etcd servers given")
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("an etcd client certificate needs both --etcd-certfile and --etcd-keyfile")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "/registry"
	}
	prefix := strings.TrimRight(cfg.Prefix, "/")
	if !strings.HasPrefix(cfg.Prefix, "/") {
		return nil, fmt.Errorf("etcd prefix %q must start with /", cfg.Prefix)
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	cc := clientv3.Config{Endpoints: cfg.Endpoints, DialTimeout: cfg.DialTimeout, Logger: zap.NewNop()}
	if cfg.CAFile != "" || cfg.CertFile != "" {
		info := transport.TLSInfo{TrustedCAFile: cfg.CAFile, CertFile: cfg.CertFile, KeyFile: cfg.KeyFile}
		tc, err := info.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd TLS configuration: %w", err)
		}
		cc.TLS = tc
	}
	client, err := clientv3.New(cc)
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd %v: %w", cfg.Endpoints, err)
	}
	// clientv3.New does not wait for a connection: one read proves the
	// servers, the TLS settings and the client's permissions before the
	// first lease is read from the source.
	probe, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	if _, err := client.Get(probe, prefix+"/leases/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("reading %s/leases/ in etcd %v: %w", prefix, cfg.Endpoints, err)
	}
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	return &etcdTarget{
		client: client,
		prefix: prefix,
		enc:    pb,
		// Clusters may store JSON (--storage-media-type); reading takes
		// either, writing always protobuf, kube-apiserver's default.
		dec: serializer.NewCodecFactory(scheme.Scheme).UniversalDeserializer(),
	}, nil
}

func (t *etcdTarget) key(namespace, name string) string {
	return t.prefix + "/leases/" + namespace + "/" + name
}

func (t *etcdTarget) Put(ctx context.Context, src *coordinationv1.Lease) (Outcome, error) {
	key := t.key(src.Namespace, src.Name)
	cur, known := t.seen.get(key)
	for range casAttempts {
		if !known {
			resp, err := t.client.Get(ctx, key)
			if err != nil {
				t.seen.forget(key)
				return 0, fmt.Errorf("reading %s in etcd: %w", key, err)
			}
			if cur, err = t.decodeKVs(key, resp.Kvs); err != nil {
				t.seen.forget(key)
				return 0, err
			}
			known = true
		}
		var (
			obj     *coordinationv1.Lease
			cond    clientv3.Cmp
			outcome Outcome
		)
		if cur.modRevision == 0 {
			// A new object keeps the source's identity, as a restore would.
			obj = withContent(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
				Name: src.Name, Namespace: src.Namespace, UID: src.UID, CreationTimestamp: src.CreationTimestamp,
			}}, src)
			cond, outcome = clientv3.Compare(clientv3.CreateRevision(key), "=", 0), Created
		} else {
			if sameContent(cur.lease, src) {
				t.seen.put(key, cur)
				return Unchanged, nil
			}
			if targetNewer(cur.lease, src) {
				t.seen.put(key, cur)
				return TargetNewer, nil
			}
			// Only over the revision compared: a writer in between
			// (kube-apiserver, another copy) makes the next round
			// compare with its content instead of being overwritten.
			obj = withContent(cur.lease, src)
			cond, outcome = clientv3.Compare(clientv3.ModRevision(key), "=", cur.modRevision), Updated
		}
		resp, err := t.write(ctx, key, obj, cond)
		if err != nil {
			t.seen.forget(key)
			return 0, err
		}
		if resp.Succeeded {
			// The transaction's revision is the key's new mod revision.
			t.seen.put(key, stored{modRevision: resp.Header.Revision, lease: obj})
			return outcome, nil
		}
		// Lost to another writer: the transaction's else branch read what
		// it wrote, so the next round compares with that without
		// another round trip.
		if cur, err = t.decodeKVs(key, resp.Responses[0].GetResponseRange().Kvs); err != nil {
			t.seen.forget(key)
			return 0, err
		}
	}
	t.seen.forget(key)
	return 0, errConflictsPersist
}

// decodeKVs decodes the key-values a read of key returned.
func (t *etcdTarget) decodeKVs(key string, kvs []*mvccpb.KeyValue) (stored, error) {
	if len(kvs) == 0 {
		return stored{}, nil
	}
	l, err := t.decode(key, kvs[0].Value)
	if err != nil {
		return stored{}, err
	}
	return stored{modRevision: kvs[0].ModRevision, lease: l}, nil
}

// write puts obj at key if cond holds, and reads key otherwise.
func (t *etcdTarget) write(ctx context.Context, key string, obj *coordinationv1.Lease, cond clientv3.Cmp) (*clientv3.TxnResponse, error) {
	obj.ResourceVersion = "" // kube-apiserver never stores it
	obj.ManagedFields = nil  // the source's writers are not the target's
	obj.SetGroupVersionKind(coordinationv1.SchemeGroupVersion.WithKind("Lease"))
	var buf bytes.Buffer
	if err := t.enc.Encode(obj, &buf); err != nil {
		return nil, fmt.Errorf("encoding %s: %w", key, err)
	}
	resp, err := t.client.Txn(ctx).If(cond).Then(clientv3.OpPut(key, buf.String())).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return nil, fmt.Errorf("writing %s in etcd: %w", key, err)
	}
	return resp, nil
}

func (t *etcdTarget) decode(key string, value []byte) (*coordinationv1.Lease, error) {
	if bytes.HasPrefix(value, encryptedPrefix) {
		return nil, fmt.Errorf("%s is encrypted at rest by kube-apiserver; leases copy can only write unencrypted leases", key)
	}
	var l coordinationv1.Lease
	if _, _, err := t.dec.Decode(value, nil, &l); err != nil {
		return nil, fmt.Errorf("decoding %s from etcd: %w", key, err)
	}
	return &l, nil
}

func (t *etcdTarget) Delete(ctx context.Context, namespace, name string) (Outcome, error) {
	key := t.key(namespace, name)
	t.seen.forget(key)
	resp, err := t.client.Delete(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("deleting %s in etcd: %w", key, err)
	}
	if resp.Deleted == 0 {
		return Unchanged, nil
	}
	return Deleted, nil
}

func (t *etcdTarget) Close() error { return t.client.Close() }
