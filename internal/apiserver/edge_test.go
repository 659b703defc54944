package apiserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/server"
	"github.com/leasehold/leasehold/internal/server/servertest"
)

func TestWatchTooOldIsExpired(t *testing.T) {
	srv := servertest.Start(t, func(c *server.Config) { c.WatchCacheWindow = 10 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leases := srv.Client.CoordinationV1().Leases("default")
	l, err := leases.Create(ctx, newLease("churn", "a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := l.ResourceVersion
	for i := 0; i < 30; i++ {
		l.Spec.HolderIdentity = ptr.To(fmt.Sprint(i))
		if l, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{ResourceVersion: first})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Error {
			t.Fatalf("event %s, want ERROR", ev.Type)
		}
		st := apierrors.FromObject(ev.Object)
		if !apierrors.IsResourceExpired(st) || !strings.HasPrefix(st.Error(), "too old resource version: "+first+" (") {
			t.Fatalf("error event %v", st)
		}
	case <-ctx.Done():
		t.Fatal("no ERROR event")
	}
}

func TestInformerSeesChanges(t *testing.T) {
	srv := servertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	factory := informers.NewSharedInformerFactoryWithOptions(srv.Client, 0, informers.WithNamespace("kube-node-lease"))
	inf := factory.Coordination().V1().Leases()
	seen := make(chan string, 100)
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, n interface{}) { seen <- "update:" + *n.(*coordinationv1.Lease).Spec.HolderIdentity },
		AddFunc:    func(o interface{}) { seen <- "add:" + o.(*coordinationv1.Lease).Name },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		t.Fatal("informer did not sync")
	}
	leases := srv.Client.CoordinationV1().Leases("kube-node-lease")
	l, err := leases.Create(ctx, newLease("inf", "a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity = ptr.To("b")
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"add:inf", "update:b"} {
		select {
		case got := <-seen:
			if got != want {
				t.Fatalf("informer event %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("informer never saw %q", want)
		}
	}
	cancel()
}

// raw sends a request with the admin credentials and returns the response.
func raw(t *testing.T, srv *servertest.Server, method, path, contentType, accept string, body []byte) (*http.Response, []byte) {
	t.Helper()
	hc, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, srv.Config.Host+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	hc.CloseIdleConnections()
	return resp, buf.Bytes()
}

func statusOf(t *testing.T, body []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("body is not a Status: %v: %s", err, body)
	}
	return st
}

func TestBadRequests(t *testing.T) {
	srv := servertest.Start(t)
	base := "/apis/coordination.k8s.io/v1/namespaces/default/leases"

	t.Run("malformed JSON is 400", func(t *testing.T) {
		resp, body := raw(t, srv, "POST", base, "application/json", "", []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":`))
		if st := statusOf(t, body); resp.StatusCode != 400 || st.Reason != metav1.StatusReasonBadRequest {
			t.Fatalf("%d %+v", resp.StatusCode, st)
		}
	})
	t.Run("body over 3 MiB is 413", func(t *testing.T) {
		big := []byte(`{"metadata":{"name":"big","annotations":{"a":"` + strings.Repeat("x", 3*1024*1024) + `"}}}`)
		resp, body := raw(t, srv, "POST", base, "application/json", "", big)
		if st := statusOf(t, body); resp.StatusCode != 413 || st.Reason != metav1.StatusReasonRequestEntityTooLarge {
			t.Fatalf("%d %+v", resp.StatusCode, st)
		}
	})
	t.Run("unknown content type is 415", func(t *testing.T) {
		resp, body := raw(t, srv, "POST", base, "text/plain", "", []byte("hello"))
		if st := statusOf(t, body); resp.StatusCode != 415 || st.Reason != metav1.StatusReasonUnsupportedMediaType {
			t.Fatalf("%d %+v", resp.StatusCode, st)
		}
	})
	t.Run("strict field validation rejects unknown fields", func(t *testing.T) {
		obj := []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"strict"},"spec":{"holderIdentity":"a","bogus":1}}`)
		resp, body := raw(t, srv, "POST", base+"?fieldValidation=Strict", "application/json", "", obj)
		st := statusOf(t, body)
		if resp.StatusCode != 400 || st.Message != `strict decoding error: unknown field "spec.bogus"` {
			t.Fatalf("%d %+v", resp.StatusCode, st)
		}
		resp, _ = raw(t, srv, "POST", base+"?fieldValidation=Warn", "application/json", "", obj)
		if resp.StatusCode != 201 || resp.Header.Get("Warning") != `299 - "unknown field \"spec.bogus\""` {
			t.Fatalf("warn: %d warning %q", resp.StatusCode, resp.Header.Get("Warning"))
		}
	})
	t.Run("anonymous is 403", func(t *testing.T) {
		// As kube-apiserver with --anonymous-auth (the default): a request
		// without credentials is system:anonymous, which may only read
		// the public health and version paths.
		cfg := rest.AnonymousClientConfig(srv.Config)
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer hc.CloseIdleConnections()
		resp, err := hc.Get(srv.Config.Host + base)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 403 || !strings.Contains(string(body), `User \"system:anonymous\" cannot list resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"default\"`) {
			t.Fatalf("anonymous list: %d %s", resp.StatusCode, body)
		}
		resp, err = hc.Get(srv.Config.Host + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("anonymous healthz: %d", resp.StatusCode)
		}
	})
}

func TestTableAndMetadata(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	if _, err := srv.Client.CoordinationV1().Leases("default").Create(ctx, newLease("tbl", "the-holder"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, body := raw(t, srv, "GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases", "", "application/json;as=Table;g=meta.k8s.io;v=v1", nil)
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v %s", resp.StatusCode, err, body)
	}
	// kubectl's default output shows the priority-0 columns, Kubernetes'
	// own; -o wide adds the priority-1 ones.
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, fmt.Sprintf("%s/%d", c.Name, c.Priority))
	}
	if strings.Join(cols, ",") != "Name/0,Holder/0,Age/0,Renew Time/1,Expires In/1" || len(table.Rows) != 1 || table.Rows[0].Cells[1] != "the-holder" {
		t.Fatalf("table %v rows %+v", cols, table.Rows)
	}

	mc, err := metadata.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	list, err := mc.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "tbl" || list.Items[0].UID == "" {
		t.Fatalf("metadata list: %v %+v", err, list)
	}
	one, err := mc.Resource(gvr).Namespace("default").Get(ctx, "tbl", metav1.GetOptions{})
	if err != nil || one.Name != "tbl" {
		t.Fatalf("metadata get: %v %+v", err, one)
	}
}

func TestApplyWithUnknownFieldIsBadRequest(t *testing.T) {
	srv := servertest.Start(t)
	body := []byte("apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: ssa\nspec:\n  holderIdentity: a\n  bogus: 1\n")
	resp, out := raw(t, srv, "PATCH", "/apis/coordination.k8s.io/v1/namespaces/default/leases/ssa?fieldManager=test", "application/apply-patch+yaml", "", body)
	st := statusOf(t, out)
	if resp.StatusCode != 400 || st.Reason != metav1.StatusReasonBadRequest || !strings.Contains(st.Message, "bogus") {
		t.Fatalf("%d %+v", resp.StatusCode, st)
	}
	resp, out = raw(t, srv, "PATCH", "/apis/coordination.k8s.io/v1/namespaces/default/leases/ssa?fieldManager=test", "application/apply-patch+yaml", "", []byte("apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: ssa\nspec:\n  holderIdentity: a\n"))
	if resp.StatusCode != 201 {
		t.Fatalf("valid apply: %d %s", resp.StatusCode, out)
	}
}

func TestYAMLRequestsAndResponses(t *testing.T) {
	srv := servertest.Start(t)
	base := "/apis/coordination.k8s.io/v1/namespaces/default/leases"
	body := []byte("apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: yml\nspec:\n  holderIdentity: from-yaml\n")
	resp, out := raw(t, srv, "POST", base, "application/yaml", "application/yaml", body)
	if resp.StatusCode != 201 || resp.Header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("create: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), out)
	}
	if !strings.Contains(string(out), "holderIdentity: from-yaml") || !strings.Contains(string(out), "kind: Lease") {
		t.Fatalf("YAML response:\n%s", out)
	}
	resp, out = raw(t, srv, "GET", base+"/yml", "", "application/yaml", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(out), "name: yml") {
		t.Fatalf("get: %d %s", resp.StatusCode, out)
	}
	resp, out = raw(t, srv, "GET", base+"/yml", "", "text/html", nil)
	if st := statusOf(t, out); resp.StatusCode != 406 || st.Reason != metav1.StatusReasonNotAcceptable {
		t.Fatalf("unacceptable Accept: %d %+v", resp.StatusCode, st)
	}
}

// The server speaks HTTP/2 (what client-go negotiates) and HTTP/1.1.
func TestHTTPVersions(t *testing.T) {
	srv := servertest.Start(t)
	tlsCfg, err := rest.TLSConfigFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		h2    bool
		major int
	}{{"HTTP/1.1", false, 1}, {"HTTP/2", true, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &http.Transport{TLSClientConfig: tlsCfg.Clone(), ForceAttemptHTTP2: tc.h2}
			if !tc.h2 {
				tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
			}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Get(srv.Config.Host + "/apis/coordination.k8s.io/v1/leases")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.ProtoMajor != tc.major {
				t.Fatalf("status %d over %s", resp.StatusCode, resp.Proto)
			}
		})
	}
}
