package configmap_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

// TestConfigMapVerbs drives every verb through client-go in protobuf, as
// controllers talk, including the conditional update leader election
// relies on.
func TestConfigMapVerbs(t *testing.T) {
	srv := servertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := kubernetes.NewForConfigOrDie(srv.ProtobufConfig())
	cms := client.CoreV1().ConfigMaps("default")

	w, err := cms.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lock"},
		Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b.bin": {0, 1}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, created, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v, want 409 AlreadyExists", err)
	}
	stale := created.DeepCopy()
	created.Data["a"] = "2"
	if _, err := cms.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale.Data["a"] = "3"
	if _, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update at a stale resourceVersion: %v, want 409 Conflict", err)
	}
	if _, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "missing"}}, metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("update of a missing configmap: %v, want 404 (a PUT does not create)", err)
	}
	if _, err := cms.Patch(ctx, "lock", "application/merge-patch+json", []byte(`{"data":{"c":"3"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Get(ctx, "lock", metav1.GetOptions{})
	if err != nil || got.Data["a"] != "2" || got.Data["c"] != "3" || string(got.BinaryData["b.bin"]) != "\x00\x01" {
		t.Fatalf("get: %+v, %v", got, err)
	}
	list, err := client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=lock"})
	if err != nil || len(list.Items) != 1 || list.Items[0].ResourceVersion != got.ResourceVersion {
		t.Fatalf("list across namespaces: %+v, %v", list, err)
	}
	if err := cms.Delete(ctx, "lock", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen []watch.EventType
	for len(seen) < 4 {
		select {
		case e := <-w.ResultChan():
			seen = append(seen, e.Type)
		case <-ctx.Done():
			t.Fatalf("watch saw %v, want ADDED MODIFIED MODIFIED DELETED", seen)
		}
	}
	if want := []watch.EventType{watch.Added, watch.Modified, watch.Modified, watch.Deleted}; !equal(seen, want) {
		t.Errorf("watch saw %v, want %v", seen, want)
	}
}

func equal(a, b []watch.EventType) bool {
	return strings.Join(types(a), ",") == strings.Join(types(b), ",")
}

func types(es []watch.EventType) []string {
	var out []string
	for _, e := range es {
		out = append(out, string(e))
	}
	return out
}

// TestConfigMapValidation: kube-apiserver's messages for bad keys, a key in
// both maps, the 1 MiB limit and an immutable ConfigMap.
func TestConfigMapValidation(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	cms := srv.Client.CoreV1().ConfigMaps("default")
	_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Data: map[string]string{"a b": "x", "dup": "y"}, BinaryData: map[string][]byte{"dup": nil}}, metav1.CreateOptions{})
	servertest.WantInvalid(t, err, `ConfigMap "bad" is invalid`,
		`data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.'`,
		`data[dup]: Invalid value: "dup": duplicate of key present in binaryData`)
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"},
		Data: map[string]string{"a": strings.Repeat("x", 1<<20), "b": "y"}}, metav1.CreateOptions{})
	servertest.WantInvalid(t, err, `Too long: may not be more than 1048576 bytes`)

	yes := true
	frozen, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "frozen"}, Immutable: &yes,
		Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	frozen.Data["a"] = "2"
	frozen.Immutable = nil
	_, err = cms.Update(ctx, frozen, metav1.UpdateOptions{})
	servertest.WantInvalid(t, err, "immutable: Forbidden: field is immutable when `immutable` is set",
		"data: Forbidden: field is immutable when `immutable` is set")
	frozen.Data, frozen.Immutable = map[string]string{"a": "1"}, &yes
	frozen.Labels = map[string]string{"metadata": "may-change"}
	if _, err := cms.Update(ctx, frozen, metav1.UpdateOptions{}); err != nil {
		t.Errorf("a label on an immutable configmap: %v", err)
	}
}

// TestConfigMapTable is the table `kubectl get cm` prints: NAME DATA AGE,
// DATA counting the keys of both maps.
func TestConfigMapTable(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	if _, err := srv.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "t"},
		Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": {1}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	raw, err := srv.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/configmaps").
		SetHeader("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1").Do(ctx).Raw()
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if strings.Join(cols, ",") != "Name,Data,Age" || len(table.Rows) != 1 {
		t.Fatalf("columns %v, %d rows", cols, len(table.Rows))
	}
	if c := table.Rows[0].Cells; c[0] != "t" || c[1] != float64(3) {
		t.Errorf("cells %v, want t 3 AGE", c)
	}
}
