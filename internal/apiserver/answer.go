package apiserver

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/apiserver/respond"
	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/request"
)

// target says what representation the client asked for in Accept.
type target int

const (
	targetObject target = iota // the resource itself
	targetTable
	targetPartialObjectMetadata     // also PartialObjectMetadataList for lists
	targetPartialObjectMetadataList // only valid for lists
)

// negotiated is the outcome of content negotiation for a response.
type negotiated struct {
	info   runtime.SerializerInfo
	target target
	pretty bool
	// include is what Table rows carry (includeObject); set by
	// withTableOptions, empty means metadata.
	include metav1.IncludeObjectPolicy
}

// negotiate picks the response serializer and representation (respond's
// negotiation, with the meta.k8s.io as= forms a resource can take). isList
// says whether list forms (PartialObjectMetadataList) are acceptable. It
// returns ok=false when nothing in Accept can be served (406).
func (s *Server) negotiate(accept string, isList bool) (negotiated, bool) {
	c, info, ok := s.neg.Negotiate(accept, func(c respond.Clause, _ runtime.SerializerInfo) bool {
		_, ok := targetOf(c.Params, isList)
		return ok
	})
	if !ok {
		return negotiated{}, false
	}
	t, _ := targetOf(c.Params, isList)
	return negotiated{info: info, target: t, pretty: c.Params["pretty"] == "1" || c.Params["pretty"] == "true"}, true
}

// targetOf reads the representation a clause's as, g and v parameters ask
// for; ok=false when this response cannot take it.
func targetOf(params map[string]string, isList bool) (target, bool) {
	as := params["as"]
	if as == "" {
		return targetObject, true
	}
	if params["g"] != "meta.k8s.io" || (params["v"] != "v1" && params["v"] != "v1beta1") {
		return 0, false
	}
	switch {
	case as == "Table":
		return targetTable, true
	case as == "PartialObjectMetadata" && !isList:
		return targetPartialObjectMetadata, true
	case as == "PartialObjectMetadataList" && isList:
		return targetPartialObjectMetadataList, true
	}
	return 0, false
}

// respond answers a successful request with obj in the negotiated form: 201
// when it created the object, 200 otherwise, with any Warning headers.
func (s *Server) respond(w http.ResponseWriter, res *registry.Resource, n negotiated, obj runtime.Object, created bool, warnings []string) error {
	out, err := s.transform(res, n, obj, false, false)
	if err != nil {
		return err
	}
	writeWarnings(w, warnings)
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	s.writeObject(w, code, n, out)
	return nil
}

// respondWritten is respond for the object a write stored, given its
// storage encoding stored (nil if unknown). When the client takes the
// object itself in protobuf, the answer is stored with the object's new
// resourceVersion spliced in (objects.WithResourceVersion), the bytes encoding the
// object would give, without encoding it again; every other answer is
// respond's.
func (s *Server) respondWritten(w http.ResponseWriter, res *registry.Resource, n negotiated, obj runtime.Object, stored []byte, created bool, warnings []string) error {
	if stored == nil || n.target != targetObject || n.pretty || n.info.MediaType != runtime.ContentTypeProtobuf {
		return s.respond(w, res, n, obj, created, warnings)
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	buf := s.answers.get()
	body, ok := objects.WithResourceVersion((*buf)[:0], stored, acc.GetResourceVersion())
	if !ok {
		s.answers.put(buf, body)
		return s.respond(w, res, n, obj, created, warnings)
	}
	writeWarnings(w, warnings)
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	auditOf(w).LogResponseObject(obj)
	respond.Body(w, code, n.info.MediaType, body)
	s.answers.put(buf, body)
	return nil
}

// respondList answers a list request with list in the negotiated form.
func (s *Server) respondList(w http.ResponseWriter, res *registry.Resource, n negotiated, list runtime.Object) error {
	out, err := s.transform(res, n, list, true, false)
	if err != nil {
		return err
	}
	s.writeObject(w, http.StatusOK, n, out)
	return nil
}

// writeWarnings adds Kubernetes-style Warning headers.
func writeWarnings(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		w.Header().Add("Warning", fmt.Sprintf("299 - %q", msg))
	}
}

// writeError answers with the Status form of err (respond.StatusFor), in
// the negotiated encoding, or JSON when the client asked for a form a
// Status cannot take.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	st := respond.StatusFor(objects.StoreUnavailable(err))
	if clientGone(r.Context()) {
		// Whatever went wrong, the client is gone: the record says so
		// (not a server fault), and the log gets a summary, not a line.
		if rec := request.RecordFrom(r.Context()); rec != nil && rec.Code == 0 {
			rec.Code = StatusClientClosedRequest
		}
		s.cancellations.note(s.logger, s.now())
		return
	}
	// A refused write on a full disk (507), a store that reopens or does
	// not answer (503), and a deadline that passed (504) are states the
	// store logs once and /readyz reports, not faults of this request: a
	// line per refused request flooded the log.
	if st.Code >= 500 && st.Code != http.StatusInsufficientStorage && st.Code != http.StatusServiceUnavailable && st.Code != http.StatusGatewayTimeout {
		s.logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeRetryAfter(w, st)
	n, ok := s.negotiate(r.Header.Get("Accept"), false)
	if !ok || n.target != targetObject {
		n = negotiated{info: s.jsonInfo}
	}
	s.writeObject(w, int(st.Code), n, st)
}

// writeRetryAfter sends a 429's or 503's retryAfterSeconds as the
// Retry-After header, as kube-apiserver's error writer does.
func writeRetryAfter(w http.ResponseWriter, st *metav1.Status) {
	if (st.Code == http.StatusTooManyRequests || st.Code == http.StatusServiceUnavailable) &&
		st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
}

// writeObject encodes obj with the negotiated serializer. obj must already
// be in the negotiated representation (object, Table, metadata). Every
// response object passes here, so here the audit event logs it (as the
// client receives it, as kube-apiserver logs it).
func (s *Server) writeObject(w http.ResponseWriter, code int, n negotiated, obj runtime.Object) {
	auditOf(w).LogResponseObject(obj)
	s.out.Object(w, code, n.info, s.jsonInfo, n.pretty, obj)
}

// accept opens every verb that answers with an object or a list: the
// response form negotiated from the request's Accept header (isList: the
// answer is a list), or the 406 when no form it names can be served.
func (s *Server) accept(r *http.Request, isList bool) (negotiated, error) {
	n, ok := s.negotiate(r.Header.Get("Accept"), isList)
	if !ok {
		return n, respond.NotAcceptable(s.neg.MediaTypes())
	}
	return n, nil
}

// unsupportedMediaType is the 415 for a body in a format not decoded.
func (s *Server) unsupportedMediaType() error {
	return respond.UnsupportedMediaType(s.neg.MediaTypes())
}

// badRequest is a 400 with Kubernetes' BadRequest reason.
func badRequest(format string, args ...interface{}) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

var (
	tableGVK   = metav1.SchemeGroupVersion.WithKind("Table")
	pomGVK     = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata")
	pomListGVK = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadataList")
)

// transform turns an object (or list) into the representation n asks for.
func (s *Server) transform(res *registry.Resource, n negotiated, obj runtime.Object, isList, noHeaders bool) (runtime.Object, error) {
	switch n.target {
	case targetTable:
		return s.toTable(res, obj, isList, noHeaders, n.include)
	case targetPartialObjectMetadata, targetPartialObjectMetadataList:
		if isList {
			return toPartialList(obj)
		}
		return toPartial(obj)
	}
	return obj, nil
}

func toPartial(obj runtime.Object) (*metav1.PartialObjectMetadata, error) {
	om, err := objects.ObjectMeta(obj)
	if err != nil {
		return nil, err
	}
	p := &metav1.PartialObjectMetadata{ObjectMeta: *om.DeepCopy()}
	p.SetGroupVersionKind(pomGVK)
	return p, nil
}

func toPartialList(list runtime.Object) (*metav1.PartialObjectMetadataList, error) {
	out := &metav1.PartialObjectMetadataList{}
	out.SetGroupVersionKind(pomListGVK)
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	out.ResourceVersion, out.Continue, out.RemainingItemCount = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
	err = meta.EachListItem(list, func(o runtime.Object) error {
		p, err := toPartial(o)
		if err != nil {
			return err
		}
		out.Items = append(out.Items, *p)
		return nil
	})
	if out.Items == nil {
		out.Items = []metav1.PartialObjectMetadata{}
	}
	return out, err
}

// toTable renders the server-side printer columns, each row carrying what
// include asks for (the object's metadata by default, as kube-apiserver).
func (s *Server) toTable(res *registry.Resource, obj runtime.Object, isList, noHeaders bool, include metav1.IncludeObjectPolicy) (*metav1.Table, error) {
	t := &metav1.Table{}
	t.SetGroupVersionKind(tableGVK)
	if !noHeaders {
		t.ColumnDefinitions = res.TableColumns
	}
	addRow := func(o runtime.Object) error {
		ro, err := tableRowObject(res, o, include)
		if err != nil {
			return err
		}
		row := metav1.TableRow{Cells: res.TableRow(o), Object: ro}
		t.Rows = append(t.Rows, row)
		return nil
	}
	if isList {
		lm, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, err
		}
		t.ResourceVersion, t.Continue, t.RemainingItemCount = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
		if err := meta.EachListItem(obj, addRow); err != nil {
			return nil, err
		}
	} else {
		acc, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		t.ResourceVersion = acc.GetResourceVersion()
		if err := addRow(obj); err != nil {
			return nil, err
		}
	}
	if t.Rows == nil {
		t.Rows = []metav1.TableRow{}
	}
	return t, nil
}

// withTableOptions applies the includeObject query parameter (meta.k8s.io
// TableOptions) to a Table response: what each row's object holds. The
// default is the object's metadata; kubectl asks for the whole object
// (includeObject=Object) when it sorts (--sort-by), since it sorts on the
// rows' objects. An unknown value is a 400, as in kube-apiserver.
func withTableOptions(n negotiated, q url.Values) (negotiated, error) {
	if n.target != targetTable {
		return n, nil
	}
	switch p := metav1.IncludeObjectPolicy(q.Get("includeObject")); p {
	case "", metav1.IncludeMetadata:
		n.include = metav1.IncludeMetadata
	case metav1.IncludeNone, metav1.IncludeObject:
		n.include = p
	default:
		return n, badRequest("unrecognized includeObject value: %q", p)
	}
	return n, nil
}

// tableRowObject is what a Table row carries for obj under policy.
func tableRowObject(res *registry.Resource, obj runtime.Object, policy metav1.IncludeObjectPolicy) (runtime.RawExtension, error) {
	switch policy {
	case metav1.IncludeNone:
		return runtime.RawExtension{}, nil
	case metav1.IncludeObject:
		// Objects may be shared with the watch cache: copy before stamping
		// the kind, never mutate.
		if obj.GetObjectKind().GroupVersionKind() != res.GroupVersionKind() {
			obj = obj.DeepCopyObject()
			obj.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
		}
		return runtime.RawExtension{Object: obj}, nil
	}
	p, err := toPartial(obj)
	if err != nil {
		return runtime.RawExtension{}, err
	}
	return runtime.RawExtension{Object: p}, nil
}
