package served_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/discovery"
	"github.com/leasehold/leasehold/internal/openapi"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/served"
)

// everything is what serve exposes on its own: the stored resources and
// the reviews.
func everything() *registry.Set {
	return served.WithReviews(served.Stored(time.Now), authz.AlwaysAllow{}, authz.AlwaysAllow{})
}

// listed is, per listed group version, the names of its resources.
func listed(t *testing.T) map[schema.GroupVersion][]string {
	t.Helper()
	out := map[schema.GroupVersion][]string{}
	for _, gv := range served.List {
		if _, dup := out[gv.GroupVersion]; dup {
			t.Errorf("%s is listed twice", gv.GroupVersion)
		}
		var names []string
		for _, r := range append(storedOf(gv), reviewsOf(gv)...) {
			if r.GroupVersion != gv.GroupVersion {
				t.Errorf("%s lists %s of %s", gv.GroupVersion, r.Resource, r.GroupVersion)
			}
			names = append(names, r.Resource)
		}
		if len(names) == 0 {
			t.Errorf("%s lists no resource", gv.GroupVersion)
		}
		sort.Strings(names)
		out[gv.GroupVersion] = names
	}
	return out
}

func storedOf(gv served.GroupVersion) []*registry.Resource {
	if gv.Stored == nil {
		return nil
	}
	return gv.Stored(time.Now)
}

func reviewsOf(gv served.GroupVersion) []*registry.Resource {
	if gv.Reviews == nil {
		return nil
	}
	return gv.Reviews(authz.AlwaysAllow{}, authz.AlwaysAllow{})
}

// TestListAgrees checks that the scheme, discovery, the OpenAPI documents
// and the generated OpenAPI definitions all hold exactly what served.List
// lists: every listed resource is in each, and none of them holds a group
// version, a resource or a definitions package that the list does not. It
// also checks that every stored resource has its table and every review
// answers.
func TestListAgrees(t *testing.T) {
	want := listed(t)
	all := everything()
	openAPIOf := map[schema.GroupVersion]string{}
	for _, gv := range served.List {
		openAPIOf[gv.GroupVersion] = gv.OpenAPI
	}

	t.Run("tables and reviews", func(t *testing.T) {
		for _, gv := range served.List {
			for _, r := range storedOf(gv) {
				if len(r.TableColumns) == 0 || r.TableRow == nil {
					t.Errorf("%s has no table for kubectl get", r.GroupVersionResource())
				}
				if r.Review != nil {
					t.Errorf("%s is listed as stored but is a review", r.GroupVersionResource())
				}
			}
			for _, r := range reviewsOf(gv) {
				if r.Review == nil {
					t.Errorf("%s is listed as a review but answers none", r.GroupVersionResource())
				}
			}
		}
	})

	t.Run("scheme", func(t *testing.T) {
		scheme, err := served.NewScheme()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range all.All() {
			kinds := []string{r.Kind}
			if r.Review == nil {
				kinds = append(kinds, r.ListKind)
			}
			for _, k := range kinds {
				if !scheme.Recognizes(r.GroupVersion.WithKind(k)) {
					t.Errorf("the scheme does not know %s, kind of %s", r.GroupVersion.WithKind(k), r.GroupVersionResource())
				}
			}
		}
		meta := reflect.TypeOf(metav1.Status{}).PkgPath()
		for gvk, typ := range scheme.AllKnownTypes() {
			gv := gvk.GroupVersion()
			switch {
			case gv.Version == "__internal" || gv == metav1.SchemeGroupVersion || typ.PkgPath() == meta:
			case openAPIOf[gv] == "":
				t.Errorf("the scheme holds %s, of a group version that is not listed", gvk)
			case typ.PkgPath() != openAPIOf[gv]:
				t.Errorf("the scheme's %s is a type of %s; the list says %s's definitions are in %s", gvk, typ.PkgPath(), gv, openAPIOf[gv])
			}
		}
	})

	t.Run("discovery", func(t *testing.T) {
		d := discovery.New(all, discovery.DefaultVersionInfo())
		got := map[schema.GroupVersion][]string{}
		var core metav1.APIVersions
		get(t, d, "/api", &core)
		var groups metav1.APIGroupList
		get(t, d, "/apis", &groups)
		var gvs []schema.GroupVersion
		for _, v := range core.Versions {
			gvs = append(gvs, schema.GroupVersion{Version: v})
		}
		for _, g := range groups.Groups {
			for _, v := range g.Versions {
				gvs = append(gvs, schema.GroupVersion{Group: g.Name, Version: v.Version})
			}
		}
		for _, gv := range gvs {
			path := "/apis/" + gv.String()
			if gv.Group == "" {
				path = "/api/" + gv.Version
			}
			var list metav1.APIResourceList
			get(t, d, path, &list)
			var names []string
			for _, r := range list.APIResources {
				if !strings.Contains(r.Name, "/") {
					names = append(names, r.Name)
				}
			}
			sort.Strings(names)
			got[gv] = names
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("discovery serves\n%v\nthe list has\n%v", got, want)
		}
	})

	t.Run("OpenAPI definitions", func(t *testing.T) {
		defs := openapi.GetOpenAPIDefinitions(func(string) spec.Ref { return spec.Ref{} })
		generated := map[string]bool{}
		for name := range defs {
			dot := strings.LastIndex(name, ".")
			if dot < strings.LastIndex(name, "/") {
				t.Fatalf("definition %q names no package", name)
			}
			generated[name[:dot]] = true
		}
		wantPkgs := map[string]bool{}
		for _, p := range served.OpenAPIPackages() {
			wantPkgs[modelPackage(p)] = true
		}
		if !reflect.DeepEqual(generated, wantPkgs) {
			t.Errorf("zz_generated.openapi.go holds the definitions of\n%v\nthe list has\n%v\n(go generate ./internal/openapi)", keys(generated), keys(wantPkgs))
		}
		for _, r := range all.All() {
			typ := reflect.TypeOf(r.New()).Elem()
			if typ.PkgPath() != openAPIOf[r.GroupVersion] {
				t.Errorf("%s is a %s, not a type of %s as the list says", r.GroupVersionResource(), typ, openAPIOf[r.GroupVersion])
			}
			if _, ok := defs[modelPackage(typ.PkgPath())+"."+typ.Name()]; !ok {
				t.Errorf("no generated definition for %s, kind of %s", typ, r.GroupVersionResource())
			}
		}
	})

	t.Run("OpenAPI documents", func(t *testing.T) {
		o, err := openapi.New(all, discovery.DefaultVersionInfo().GitVersion)
		if err != nil {
			t.Fatal(err)
		}
		got := map[schema.GroupVersion][]string{}
		for path := range o.V2().Paths.Paths {
			segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
			var gv schema.GroupVersion
			var rest []string
			switch {
			case segs[0] == "api" && len(segs) > 2:
				gv, rest = schema.GroupVersion{Version: segs[1]}, segs[2:]
			case segs[0] == "apis" && len(segs) > 3:
				gv, rest = schema.GroupVersion{Group: segs[1], Version: segs[2]}, segs[3:]
			default:
				continue // a group's or version's discovery path
			}
			if rest[0] == "watch" {
				rest = rest[1:]
			}
			if len(rest) > 2 && rest[0] == "namespaces" && rest[1] == "{namespace}" {
				rest = rest[2:]
			}
			if rest[0] == "" {
				continue // the version's discovery path
			}
			if !slices.Contains(got[gv], rest[0]) {
				got[gv] = append(got[gv], rest[0])
			}
		}
		for gv := range got {
			sort.Strings(got[gv])
			doc := "apis/" + gv.String()
			if gv.Group == "" {
				doc = "api/" + gv.Version
			}
			if _, ok := o.V3(doc); !ok {
				t.Errorf("no OpenAPI v3 document %s", doc)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("the OpenAPI v2 document has paths for\n%v\nthe list has\n%v", got, want)
		}
	})
}

// TestClusterIsASelection checks that what serve exposes behind a cluster
// is the listed coordination.k8s.io versions, with the very resources serve
// stores on its own.
func TestClusterIsASelection(t *testing.T) {
	own := served.Stored(time.Now)
	cluster := served.Cluster(time.Now)
	want := []schema.GroupVersion{coordinationv1.SchemeGroupVersion, coordinationv1beta1.SchemeGroupVersion}
	if got := cluster.GroupVersions(); !reflect.DeepEqual(got, want) {
		t.Errorf("behind a cluster serve exposes %v, want %v", got, want)
	}
	for _, r := range cluster.All() {
		if _, ok := own.Lookup(r.GroupVersion.Group, r.GroupVersion.Version, r.Resource); !ok {
			t.Errorf("%s is served behind a cluster but not on its own", r.GroupVersionResource())
		}
		if r.Review != nil {
			t.Errorf("%s: behind a cluster the cluster answers the reviews", r.GroupVersionResource())
		}
	}
}

func get(t *testing.T, h http.Handler, path string, into any) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Accept", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// modelPackage is the prefix of a package's definitions:
// "io.k8s.api.core.v1" for k8s.io/api/core/v1.
func modelPackage(pkg string) string {
	host, path, _ := strings.Cut(pkg, "/")
	labels := strings.Split(host, ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".") + "." + strings.ReplaceAll(path, "/", ".")
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
