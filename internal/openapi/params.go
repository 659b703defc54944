package openapi

import (
	"fmt"
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
)

// param is one route parameter; it implements common.Parameter.
type param struct {
	name        string
	description string
	kind        common.ParameterKind
	dataType    string
	required    bool
}

func (p param) Name() string               { return p.name }
func (p param) Description() string        { return p.description }
func (p param) Required() bool             { return p.required }
func (p param) Kind() common.ParameterKind { return p.kind }
func (p param) DataType() string           { return p.dataType }
func (p param) AllowMultiple() bool        { return false }

// optionParams holds the query parameters of each verb, derived (like
// kube-apiserver does from the same Go structs) from the generated schemas of
// the meta/v1 option types: a parameter per scalar property, with the type
// and description the generator took from the Go field.
type optionParams struct {
	list, create, update, patch, delete []param
}

func newOptionParams(defs map[string]common.OpenAPIDefinition) (*optionParams, error) {
	var err error
	from := func(model interface{}) []param {
		if err != nil {
			return nil
		}
		var ps []param
		ps, err = queryParamsOf(defs, util.GetCanonicalTypeName(model))
		return ps
	}
	o := &optionParams{
		list:   from(&metav1.ListOptions{}),
		create: from(&metav1.CreateOptions{}),
		update: from(&metav1.UpdateOptions{}),
		patch:  from(&metav1.PatchOptions{}),
		delete: from(&metav1.DeleteOptions{}),
	}
	if err != nil {
		return nil, err
	}
	return o, nil
}

// queryParamsOf turns the scalar (and list-of-scalar) properties of a
// generated definition into query parameters, sorted by name.
func queryParamsOf(defs map[string]common.OpenAPIDefinition, model string) ([]param, error) {
	def, ok := defs[model]
	if !ok {
		return nil, fmt.Errorf("no generated definition for %s", model)
	}
	var out []param
	for name, prop := range def.Schema.Properties {
		switch name {
		case "kind", "apiVersion":
			// They identify the options object in a body; they are not
			// query parameters.
			continue
		case "shardSelector":
			// The alpha sharded-list selector (ListOptions, 1.37) is not
			// implemented; advertising it would promise behaviour the
			// server does not have.
			continue
		}
		typ := ""
		if len(prop.Type) == 1 {
			typ = prop.Type[0]
		}
		// A repeated query parameter (dryRun) is published with its item
		// type, as kube-apiserver does.
		if typ == "array" && prop.Items != nil && prop.Items.Schema != nil && len(prop.Items.Schema.Type) == 1 {
			typ = prop.Items.Schema.Type[0]
		}
		switch typ {
		case "string", "integer", "boolean":
		default:
			// Structured fields (DeleteOptions.preconditions) travel only
			// in the body.
			continue
		}
		out = append(out, param{
			name:        name,
			description: prop.Description,
			kind:        common.QueryParameterKind,
			dataType:    typ,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// filterParams returns ps without the named parameters.
func filterParams(ps []param, drop ...string) []param {
	out := make([]param, 0, len(ps))
	for _, p := range ps {
		if !slices.Contains(drop, p.name) {
			out = append(out, p)
		}
	}
	return out
}
