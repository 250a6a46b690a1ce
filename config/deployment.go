package config

import (
	"fmt"
	"strings"
)

// CheckDeployment refuses to let encore api or encore worker run outside
// development half-configured: without the database, Redis or the Temporal
// cluster they cannot do their work, and their development fallbacks (a
// Temporal server on 127.0.0.1:7233 that encore dev would have embedded)
// would only fail later, on a fan's checkout. The error names every missing
// variable at once. Other commands, and development, pass.
func (c Config) CheckDeployment(command string) error {
	if c.Development() || (command != "api" && command != "worker") {
		return nil
	}
	var missing []string
	for _, v := range []struct {
		env, why string
		set      bool
	}{
		{"ENCORE_DATABASE_URL", "the PostgreSQL database (as encore_app)", c.DatabaseURL.Reveal() != ""},
		{"ENCORE_REDIS_URL", "Redis: one server, a cluster or a Sentinel master", c.RedisURL.Reveal() != ""},
		{"ENCORE_TEMPORAL_ADDRESS", "the Temporal cluster's frontend (encore temporal's, or your own)", c.TemporalAddress != ""},
	} {
		if !v.set {
			missing = append(missing, fmt.Sprintf("%s (%s)", v.env, v.why))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("encore %s cannot run with ENCORE_ENV=%s half-configured: set %s; "+
		"only encore dev provides these itself", command, c.Env, strings.Join(missing, ", "))
}
