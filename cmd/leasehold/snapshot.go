package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leasehold/leasehold/internal/snapshot"
	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/embedded"
	"github.com/leasehold/leasehold/internal/storage/etcd"
)

// snapshotStore names the store a snapshot verb reads or writes, with
// serve's flag names.
type snapshotStore struct {
	dataDir    string
	kubeconfig string
	etcd       etcd.Config
	bump       int64
	etcdDB     string
}

func newSnapshotCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Back up a store to a file, restore it into a new embedded store or an etcd cluster",
		Long: `A snapshot holds every object of a store, read at one revision, with each
object's resourceVersion. 'save' reads the embedded store while 'leasehold
serve' runs (--kubeconfig, as system:masters), an embedded store no server
has open (--data-dir), or etcd (--etcd-servers). 'restore' writes a new
embedded store (--data-dir) or an etcd snapshot database for etcd's own
restore tool (--etcd-snapshot-db). Objects keep their resourceVersions; a
client resuming from an older one gets 410 Expired and relists.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newSnapshotSaveCmd(), newSnapshotRestoreCmd(), newSnapshotStatusCmd())
	return cmd
}

func newSnapshotSaveCmd() *cobra.Command {
	var o snapshotStore
	cmd := &cobra.Command{
		Use:   "save FILE",
		Short: "Write a snapshot of a store to FILE",
		Example: `  leasehold snapshot save backup.snap --kubeconfig leasehold-data/admin.kubeconfig   # online
  leasehold snapshot save backup.snap --data-dir leasehold-data                      # server stopped
  leasehold snapshot save backup.snap --etcd-servers http://127.0.0.1:2379`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ways := 0
			for _, set := range []bool{o.kubeconfig != "", cmd.Flags().Changed("data-dir"), len(o.etcd.Endpoints) > 0} {
				if set {
					ways++
				}
			}
			if ways != 1 {
				return &exitError{code: 2, err: errors.New("say which store to read: exactly one of --kubeconfig, --data-dir or --etcd-servers")}
			}
			var h snapshot.Header
			var n uint64
			err := snapshot.WriteFile(args[0], func(w io.Writer) (err error) {
				h, n, err = o.save(cmd.Context(), w)
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "saved %d keys of the %s store at revision %d to %s\n", n, h.Source, h.Revision, args[0])
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "save online through the server this kubeconfig names (its user must be in system:masters)")
	f.StringVar(&o.dataDir, "data-dir", "leasehold-data", "save the embedded store in this --data-dir of a server that is not running")
	addSnapshotEtcdFlags(cmd, &o.etcd)
	f.StringSliceVar(&o.etcd.Endpoints, "etcd-servers", nil, "save from this etcd cluster (client URLs, comma-separated)")
	return cmd
}

// save reads the store the flags name into w.
func (o *snapshotStore) save(ctx context.Context, w io.Writer) (snapshot.Header, uint64, error) {
	if o.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
		if err != nil {
			return snapshot.Header{}, 0, fmt.Errorf("load --kubeconfig %s: %w", o.kubeconfig, err)
		}
		return snapshot.Fetch(ctx, cfg, w)
	}
	var s storage.Interface
	if len(o.etcd.Endpoints) > 0 {
		es, err := etcd.New(ctx, o.etcd)
		if err != nil {
			return snapshot.Header{}, 0, err
		}
		s = es
	} else {
		dir := filepath.Join(o.dataDir, "db")
		if _, err := os.Stat(dir); err != nil {
			return snapshot.Header{}, 0, fmt.Errorf("no embedded store in --data-dir %s: %w", o.dataDir, err)
		}
		es, err := embedded.Open(dir, embedded.Options{})
		if err != nil {
			return snapshot.Header{}, 0, fmt.Errorf("%w (if 'leasehold serve' runs on it, save through it with --kubeconfig)", err)
		}
		s = es
	}
	h, n, err := snapshot.Save(ctx, s, w)
	return h, n, errors.Join(err, s.Close())
}

func newSnapshotRestoreCmd() *cobra.Command {
	var o snapshotStore
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Write the snapshot in FILE into a new embedded store, or an etcd snapshot database",
		Long: `Restore FILE into a new embedded store in --data-dir (its db directory must
not exist or be empty; the rest of the data dir, its CA and kubeconfigs, is
left as it is), or into an etcd snapshot database (--etcd-snapshot-db) that
'etcdutl snapshot restore' (etcdctl before etcd 3.5) restores on every
member of a new cluster. Every object keeps its resourceVersion, and the
store continues from the snapshot's revision plus --bump-revision,
compacted there.`,
		Example: `  leasehold snapshot restore backup.snap --data-dir new-data
  leasehold snapshot restore backup.snap --etcd-snapshot-db leases.db
  etcdutl snapshot restore leases.db --data-dir member-1 --name m1 --initial-cluster m1=http://10.0.0.1:2380 ...`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("data-dir") == (o.etcdDB != "") {
				return &exitError{code: 2, err: errors.New("say where to restore: exactly one of --data-dir or --etcd-snapshot-db")}
			}
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			opts := snapshot.RestoreOptions{BumpRevision: o.bump}
			var h snapshot.Header
			var n uint64
			where := o.etcdDB
			if o.etcdDB != "" {
				h, n, err = snapshot.WriteEtcdDB(f, o.etcdDB, o.etcd.Prefix, opts)
			} else {
				where = filepath.Join(o.dataDir, "db")
				h, n, err = snapshot.RestoreEmbedded(f, where, opts)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %d keys at revision %d into %s (continues from revision %d)\n",
				n, h.Revision, where, h.Revision+o.bump)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", "leasehold-data", "restore into a new embedded store in this --data-dir (as <data-dir>/db)")
	f.StringVar(&o.etcdDB, "etcd-snapshot-db", "", "write an etcd snapshot database to this new file instead")
	f.StringVar(&o.etcd.Prefix, "etcd-prefix", etcd.DefaultPrefix, "with --etcd-snapshot-db: the etcd key prefix that replaces the /registry of every key (serve's --etcd-prefix)")
	f.Int64Var(&o.bump, "bump-revision", 0, "continue from the snapshot's revision plus this; after restoring an online backup, make it more than the writes the old store took after the snapshot, so clients' newer resourceVersions expire (410) instead of being reused")
	return cmd
}

func newSnapshotStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status FILE",
		Short: "Check that FILE is a whole snapshot and print its revision and key count",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			h, n, err := snapshot.Verify(f)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revision %d, %d keys under %s, from the %s store, taken %s\n",
				h.Revision, n, h.Prefix, h.Source, h.Created.Format("2006-01-02T15:04:05Z"))
			return nil
		},
	}
}

// addSnapshotEtcdFlags adds serve's etcd connection flags.
func addSnapshotEtcdFlags(cmd *cobra.Command, c *etcd.Config) {
	f := cmd.Flags()
	f.StringVar(&c.Prefix, "etcd-prefix", etcd.DefaultPrefix, "etcd key prefix that replaces the /registry of every key")
	f.StringVar(&c.CAFile, "etcd-cafile", "", "CA bundle that verifies the etcd servers")
	f.StringVar(&c.CertFile, "etcd-certfile", "", "client certificate for etcd, with --etcd-keyfile")
	f.StringVar(&c.KeyFile, "etcd-keyfile", "", "client certificate key for etcd")
}
