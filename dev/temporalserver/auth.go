package temporalserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"strings"
	"time"

	"go.temporal.io/server/common/api"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/primitives"

	"github.com/encore-tickets/encore/session"
)

// Who may call the embedded server's frontend (its gRPC port and its HTTP
// API), decided on every call by the claim mapper and authorizer below:
//
//   - Encore's own processes (encore api, worker, gate, dev, the tests)
//     send Config.APIKey as "Authorization: Bearer <key>" (the SDK's API key
//     credentials): everything, on every namespace, namespace registration
//     and search attributes included.
//   - The Web UI forwards its signed-in user's access token. One that
//     Config.StaffTokens verifies and that names the role support or admin
//     may read every namespace but the server's own (temporal-system) and
//     steer workflows: signal, update, cancel, terminate, reset, pause and
//     reset activities, batch operations (StaffWriteAPIs). Nothing that only
//     a worker does (polling, completing tasks, heartbeats: a forged
//     completion would settle a booking's step with whatever result it
//     says), no deleting or starting workflows, no schedule, namespace or
//     deployment changes.
//   - Everyone else (no token, another token, a fan's or an organiser's) is
//     refused with PermissionDenied, except the gRPC health check.
//
// The server's own system workers (the scheduler behind Encore's
// schedules, the batcher behind batch operations) dial the internal
// frontend instead (see Start), which trusts its callers as history and
// matching trust each other: all three listen on loopback only.

// StaffWriteAPIs are the WorkflowService calls beyond reading that a
// support or admin may make from the Web UI.
var StaffWriteAPIs = []string{
	"SignalWorkflowExecution",
	"UpdateWorkflowExecution",
	"RequestCancelWorkflowExecution",
	"TerminateWorkflowExecution",
	"ResetWorkflowExecution",
	"PauseWorkflowExecution",
	"UnpauseWorkflowExecution",
	"PauseActivity",
	"UnpauseActivity",
	"ResetActivity",
	"UpdateActivityOptions",
	"StartBatchOperation",
	"StopBatchOperation",
}

// internalSubject is the subject of Encore's own processes' claims.
const internalSubject = "encore"

// staffClaims marks the claims of a support or admin user.
type staffClaims struct{ UserID string }

// claimMapper maps the Authorization header to claims: the internal key's
// holder is the system admin, a support or admin token is staff, anything
// else is nobody (empty claims, refused by the authorizer).
type claimMapper struct {
	keyHash [sha256.Size]byte
	tokens  func() *session.Verifier
}

func newClaimMapper(apiKey string, tokens func() *session.Verifier) *claimMapper {
	return &claimMapper{keyHash: sha256.Sum256([]byte(apiKey)), tokens: tokens}
}

// verifyTimeout bounds a token's verification (a key fetch for an unknown
// key ID included): the mapper is given no context.
const verifyTimeout = 5 * time.Second

func (m *claimMapper) GetClaims(ai *authorization.AuthInfo) (*authorization.Claims, error) {
	nobody := &authorization.Claims{}
	if ai == nil {
		return nobody, nil
	}
	scheme, tok, ok := strings.Cut(ai.AuthToken, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return nobody, nil
	}
	// Hash both sides: the comparison takes the same time whatever the
	// length of the guess.
	got := sha256.Sum256([]byte(tok))
	if subtle.ConstantTimeCompare(got[:], m.keyHash[:]) == 1 {
		return &authorization.Claims{Subject: internalSubject, System: authorization.RoleAdmin}, nil
	}
	if m.tokens == nil {
		return nobody, nil
	}
	v := m.tokens()
	if v == nil {
		return nobody, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), verifyTimeout)
	defer cancel()
	id, err := v.Verify(ctx, tok)
	if err != nil {
		return nobody, nil
	}
	if id.Has(session.Support) || id.Has(session.Admin) {
		return &authorization.Claims{Subject: "staff:" + id.UserID, Extensions: staffClaims{UserID: id.UserID}}, nil
	}
	return &authorization.Claims{Subject: "user:" + id.UserID}, nil
}

// authorizer decides on the claims (see the top of this file).
type authorizer struct{}

var (
	allow = authorization.Result{Decision: authorization.DecisionAllow}
	deny  = authorization.Result{Decision: authorization.DecisionDeny,
		Reason: "sign in to the Temporal Web UI as support or admin; Encore's processes send their API key"}
)

func (authorizer) Authorize(_ context.Context, c *authorization.Claims, t *authorization.CallTarget) (authorization.Result, error) {
	if authorization.IsHealthCheckAPI(t.APIName) {
		return allow, nil
	}
	if c == nil {
		return deny, nil
	}
	// The system admin: Encore's processes (claimMapper, by the API key)
	// and, on the internal frontend, the server's own system workers (its
	// claim mapper admits every caller so). No other claims carry it.
	if c.System == authorization.RoleAdmin {
		return allow, nil
	}
	if _, staff := c.Extensions.(staffClaims); !staff {
		return deny, nil
	}
	if staffMay(t) {
		return allow, nil
	}
	return deny, nil
}

// staffMay reports whether a support or admin user may make call t.
func staffMay(t *authorization.CallTarget) bool {
	md := api.GetMethodMetadata(t.APIName)
	switch md.Scope {
	case api.ScopeCluster:
		return md.Access == api.AccessReadOnly
	case api.ScopeNamespace:
		if t.Namespace == "" || t.Namespace == primitives.SystemLocalNamespace {
			return false
		}
		if md.Access == api.AccessReadOnly {
			return true
		}
		if md.Access != api.AccessWrite || !strings.HasPrefix(t.APIName, api.WorkflowServicePrefix) {
			return false
		}
		name := strings.TrimPrefix(t.APIName, api.WorkflowServicePrefix)
		for _, w := range StaffWriteAPIs {
			if name == w {
				return true
			}
		}
	}
	return false
}

// randomKey is a fresh API key for a server started without one.
func randomKey() string { return rand.Text() + rand.Text() }
