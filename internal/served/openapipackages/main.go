// Command openapipackages prints, one a line, the Go packages whose
// OpenAPI definitions internal/openapi/generate.sh generates:
// served.OpenAPIPackages.
package main

import (
	"fmt"

	"github.com/leasehold/leasehold/internal/served"
)

func main() {
	for _, p := range served.OpenAPIPackages() {
		fmt.Println(p)
	}
}
