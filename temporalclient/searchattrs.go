package temporalclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
)

// Services is the part of a Temporal client that EnsureNamespace uses
// (client.Client provides both).
type Services interface {
	OperatorService() operatorservice.OperatorServiceClient
	WorkflowService() workflowservice.WorkflowServiceClient
}

// EnsureNamespace checks that namespace exists and registers the custom
// search attributes it lacks. A workflow that upserts an unregistered
// attribute is rejected by the server, so a process refuses to start
// rather than fail every booking later. It is idempotent, and an attribute
// registered with another type, or a caller the cluster does not allow to
// add attributes, is an error that says what to do.
func EnsureNamespace(ctx context.Context, c Services, namespace string, attrs map[string]enums.IndexedValueType) error {
	if _, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace}); err != nil {
		var missing *serviceerror.NamespaceNotFound
		if errors.As(err, &missing) {
			return fmt.Errorf("temporal namespace %q does not exist: create it (temporal operator namespace create %s) or set ENCORE_TEMPORAL_NAMESPACE", namespace, namespace)
		}
		return fmt.Errorf("temporal namespace %q: %w", namespace, err)
	}
	if len(attrs) == 0 {
		return nil
	}
	op := c.OperatorService()
	list, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("temporal namespace %q: list search attributes: %w", namespace, err)
	}
	add := map[string]enums.IndexedValueType{}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		want := attrs[name]
		have, ok := list.GetCustomAttributes()[name]
		if !ok {
			if _, sys := list.GetSystemAttributes()[name]; sys {
				return fmt.Errorf("%s is a system search attribute", name)
			}
			add[name] = want
			continue
		}
		if have != want {
			return fmt.Errorf("search attribute %s is registered as %s in namespace %q, Encore needs %s", name, have, namespace, want)
		}
	}
	if len(add) == 0 {
		return nil
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: add})
	var denied *serviceerror.PermissionDenied
	if errors.As(err, &denied) {
		return fmt.Errorf("temporal namespace %q lacks the search attributes %s and this client may not add them: "+
			"register them as Keyword (temporal operator search-attribute create --namespace %s --name <name> --type Keyword): %w",
			namespace, strings.Join(slices.Sorted(maps.Keys(add)), ", "), namespace, err)
	}
	if err != nil {
		return fmt.Errorf("temporal namespace %q: add search attributes: %w", namespace, err)
	}
	return nil
}
