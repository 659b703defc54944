package openapi

import "k8s.io/kube-openapi/pkg/common"

// route is one operation; it implements common.Route so kube-openapi's
// builders can turn it into v2 and v3 operations exactly as they do for
// go-restful routes in kube-apiserver.
type route struct {
	method      string
	path        string
	operationID string
	tags        []string
	description string
	params      []common.Parameter
	consumes    []string
	produces    []string
	metadata    map[string]interface{}
	// body is a sample of the request body type, nil when there is none.
	body      interface{}
	responses []common.StatusCodeResponse
}

func (r *route) Method() string                                   { return r.method }
func (r *route) Path() string                                     { return r.path }
func (r *route) OperationName() string                            { return r.operationID }
func (r *route) Parameters() []common.Parameter                   { return r.params }
func (r *route) Description() string                              { return r.description }
func (r *route) Consumes() []string                               { return r.consumes }
func (r *route) Produces() []string                               { return r.produces }
func (r *route) Metadata() map[string]interface{}                 { return r.metadata }
func (r *route) RequestPayloadSample() interface{}                { return r.body }
func (r *route) ResponsePayloadSample() interface{}               { return nil }
func (r *route) StatusCodeResponses() []common.StatusCodeResponse { return r.responses }

// response implements common.StatusCodeResponse; model is a sample of the
// body type, from which the builder finds the generated definition.
type response struct {
	code    int
	message string
	model   interface{}
}

func (r response) Code() int          { return r.code }
func (r response) Message() string    { return r.message }
func (r response) Model() interface{} { return r.model }

// service is a set of routes under one root path; it implements
// common.RouteContainer. doc names the /openapi/v3 document it belongs to
// ("api/v1", "apis/coordination.k8s.io/v1", ...).
type service struct {
	doc    string
	root   string
	routes []common.Route
}

func (s *service) RootPath() string                   { return s.root }
func (s *service) PathParameters() []common.Parameter { return nil }
func (s *service) Routes() []common.Route             { return s.routes }

// operationIDAndTags implements the builders' GetOperationIDAndTagsFromRoute
// hook: every route here is a *route carrying its own ID and tags.
func operationIDAndTags(r common.Route) (string, []string, error) {
	if rt, ok := r.(*route); ok {
		return rt.operationID, rt.tags, nil
	}
	return r.OperationName(), nil, nil
}
