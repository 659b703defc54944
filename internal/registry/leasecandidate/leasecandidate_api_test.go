package leasecandidate_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

func candidate(name string) *coordinationv1beta1.LeaseCandidate {
	return &coordinationv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: coordinationv1beta1.LeaseCandidateSpec{
			LeaseName:        "kube-controller-manager",
			RenewTime:        &metav1.MicroTime{Time: time.Now()},
			BinaryVersion:    "1.33.0",
			EmulationVersion: "1.32.0",
			Strategy:         coordinationv1.OldestEmulationVersion,
		},
	}
}

// TestLeaseCandidateValidation checks kube-apiserver's messages for each
// rule of reference §6.3, over protobuf (as kube-apiserver's own candidate
// client talks).
func TestLeaseCandidateValidation(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	cands := kubernetes.NewForConfigOrDie(srv.ProtobufConfig()).CoordinationV1beta1().LeaseCandidates("kube-system")

	for _, tc := range []struct {
		name   string
		mutate func(*coordinationv1beta1.LeaseCandidateSpec)
		want   []string
	}{
		{"all required missing", func(s *coordinationv1beta1.LeaseCandidateSpec) { *s = coordinationv1beta1.LeaseCandidateSpec{} },
			[]string{"spec.leaseName: Required value", "spec.binaryVersion: Required value", "spec.strategy: Required value"}},
		{"binary not semver", func(s *coordinationv1beta1.LeaseCandidateSpec) { s.BinaryVersion = "1.33" },
			[]string{`spec.binaryVersion: Invalid value: "1.33": must be a valid semantic version`}},
		{"leading v", func(s *coordinationv1beta1.LeaseCandidateSpec) { s.BinaryVersion = "v1.33.0" },
			[]string{`spec.binaryVersion: Invalid value: "v1.33.0": must be a valid semantic version`}},
		{"emulation not semver", func(s *coordinationv1beta1.LeaseCandidateSpec) { s.EmulationVersion = "latest" },
			[]string{`spec.emulationVersion: Invalid value: "latest": must be a valid semantic version`}},
		{"emulation above binary", func(s *coordinationv1beta1.LeaseCandidateSpec) { s.EmulationVersion = "1.34.0" },
			[]string{"spec.binaryVersion: Invalid value: \"1.33.0\": must be greater than or equal to `emulationVersion`"}},
		{"oldest emulation without emulation", func(s *coordinationv1beta1.LeaseCandidateSpec) { s.EmulationVersion = "" },
			[]string{"spec.emulationVersion: Required value: must be specified when `strategy` is 'OldestEmulationVersion'"}},
		{"unknown strategy", func(s *coordinationv1beta1.LeaseCandidateSpec) { s.Strategy = "Newest" },
			[]string{`spec.strategy.strategy: Unsupported value: "Newest": supported values: "OldestEmulationVersion"`}},
		{"bad custom strategy", func(s *coordinationv1beta1.LeaseCandidateSpec) { s.Strategy = "example.com/a/b" },
			[]string{`spec.strategy.strategy: Invalid value: "example.com/a/b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := candidate("c-" + strings.ReplaceAll(tc.name, " ", "-"))
			tc.mutate(&c.Spec)
			_, err := cands.Create(ctx, c, metav1.CreateOptions{})
			servertest.WantInvalid(t, err, tc.want...)
		})
	}

	// Valid variants: a custom strategy needs no emulationVersion; the
	// name is a ConfigMap key (identity-style, with '_' and capitals).
	custom := candidate("Host_1234-abcd")
	custom.Spec.Strategy = "example.com/custom"
	custom.Spec.EmulationVersion = ""
	created, err := cands.Create(ctx, custom, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	_, err = cands.Create(ctx, candidate("bad/name"), metav1.CreateOptions{})
	servertest.WantInvalid(t, err, `metadata.name: Invalid value: "bad/name": a valid config key must consist of alphanumeric characters`)

	// leaseName is immutable; the rest may change (renewals).
	upd := created.DeepCopy()
	upd.Spec.LeaseName = "other"
	_, err = cands.Update(ctx, upd, metav1.UpdateOptions{})
	servertest.WantInvalid(t, err, `spec.leaseName: Invalid value: "other": field is immutable`)
	upd = created.DeepCopy()
	upd.Spec.PingTime = &metav1.MicroTime{Time: time.Now()}
	upd.Spec.BinaryVersion = "1.34.0-rc.1"
	if _, err := cands.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("renewal update of a candidate with an underscore name: %v", err)
	}
}

// TestLeaseCandidateInformerSelector: client-go's candidate watches its own
// object with a metadata.name field selector; the watch must see only it.
func TestLeaseCandidateInformerSelector(t *testing.T) {
	srv := servertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cands := srv.Client.CoordinationV1beta1().LeaseCandidates("kube-system")
	const me = "cp-1_0b6d1a2c"
	w, err := cands.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + me})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	for _, n := range []string{"cp-2_77aa", me} {
		if _, err := cands.Create(ctx, candidate(n), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", n, err)
		}
	}
	select {
	case ev := <-w.ResultChan():
		c, ok := ev.Object.(*coordinationv1beta1.LeaseCandidate)
		if ev.Type != watch.Added || !ok || c.Name != me {
			t.Fatalf("first event %s %#v, want ADDED %s", ev.Type, ev.Object, me)
		}
	case <-ctx.Done():
		t.Fatal("no watch event")
	}
	// A PUT to a missing candidate creates it, as upstream allows.
	put := candidate("cp-3_put")
	put.ResourceVersion = "1"
	if _, err := cands.Update(ctx, put, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("create on update: %v", err)
	}
	list, err := cands.List(ctx, metav1.ListOptions{FieldSelector: "metadata.namespace=kube-system,metadata.name!=" + me})
	if err != nil || len(list.Items) != 2 || list.Items[0].Name != "cp-2_77aa" || list.Items[1].Name != "cp-3_put" {
		t.Fatalf("list: %v %+v", err, list)
	}
}

// TestLeaseCandidateTableAndDiscovery: kubectl's columns, and discovery of
// coordination.k8s.io/v1beta1 next to v1.
func TestLeaseCandidateTableAndDiscovery(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	if _, err := srv.Client.CoordinationV1beta1().LeaseCandidates("kube-system").Create(ctx, candidate("kcm-a"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	raw, err := srv.Client.CoordinationV1beta1().RESTClient().Get().AbsPath("/apis/coordination.k8s.io/v1beta1/namespaces/kube-system/leasecandidates").
		SetHeader("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1").Do(ctx).Raw()
	if err != nil {
		t.Fatalf("table: %v", err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatalf("decode: %v", err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if want := []string{"Name", "LeaseName", "BinaryVersion", "EmulationVersion", "Age"}; !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("rows: %d", len(table.Rows))
	}
	if got := table.Rows[0].Cells[:4]; !slices.Equal(got, []interface{}{"kcm-a", "kube-controller-manager", "1.33.0", "1.32.0"}) {
		t.Errorf("cells %v", got)
	}

	list, err := srv.Client.Discovery().ServerResourcesForGroupVersion("coordination.k8s.io/v1beta1")
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	i := slices.IndexFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "leasecandidates" })
	if i < 0 {
		t.Fatalf("v1beta1 lacks leasecandidates: %+v", list.APIResources)
	}
	if r := list.APIResources[i]; !r.Namespaced || r.Kind != "LeaseCandidate" || !slices.Contains(r.Verbs, "watch") || !slices.Contains(r.Verbs, "deletecollection") {
		t.Errorf("leasecandidates: %+v", r)
	}
	groups, err := srv.Client.Discovery().ServerGroups()
	if err != nil {
		t.Fatalf("groups: %v", err)
	}
	var versions []string
	for _, g := range groups.Groups {
		if g.Name == "coordination.k8s.io" {
			for _, v := range g.Versions {
				versions = append(versions, v.Version)
			}
			if g.PreferredVersion.Version != "v1" {
				t.Errorf("preferred version %s, want v1", g.PreferredVersion.Version)
			}
		}
	}
	if !slices.Contains(versions, "v1") || !slices.Contains(versions, "v1beta1") {
		t.Errorf("coordination.k8s.io versions %v", versions)
	}
}
