package flinkschema

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed */rest_v*_sql_gateway.yml
var gatewayFiles embed.FS

// gatewayDirs maps each Flink minor to the directory holding its SQL
// Gateway schemas and the API versions it serves (SqlGatewayRestAPIVersion):
// V1 and V2 from 1.16/1.17, V3 from 1.20 (FLIP-448's materialized tables),
// V4 from 2.0 (FLIP-480's scripts). 2.1 and 2.2 ship 2.0's bytes (README.md).
var gatewayDirs = map[string]struct {
	dir      string
	versions int
}{
	"1.17": {"1.17", 2}, "1.18": {"1.18", 2}, "1.19": {"1.19", 2}, "1.20": {"1.20", 3},
	"2.0": {"2.0", 4}, "2.1": {"2.0", 4}, "2.2": {"2.0", 4},
}

// GatewayVersions is how many SQL Gateway REST API versions the minor
// serves (V1..V<n>); 0 when its gateway schema is not embedded.
func GatewayVersions(minor string) int { return gatewayDirs[minor].versions }

// ForGateway parses the embedded SQL Gateway REST description of a Flink
// minor's API version (1 for /v1, ...), once. Its paths are matched with or
// without the /v<version> prefix.
func ForGateway(minor string, version int) (*Schema, error) {
	key := fmt.Sprintf("gateway/%s/v%d", minor, version)
	mu.Lock()
	defer mu.Unlock()
	if s := loaded[key]; s != nil {
		return s, nil
	}
	d, ok := gatewayDirs[minor]
	if !ok || version < 1 || version > d.versions {
		return nil, fmt.Errorf("Flink %s serves no SQL Gateway REST API v%d", minor, version)
	}
	raw, err := gatewayFiles.ReadFile(fmt.Sprintf("%s/rest_v%d_sql_gateway.yml", d.dir, version))
	if err != nil {
		return nil, err
	}
	doc, err := loadDoc(raw)
	if err != nil {
		return nil, fmt.Errorf("loading the Flink %s SQL Gateway v%d schema: %w", minor, version, err)
	}
	s := &Schema{Minor: minor, Doc: doc, prefix: fmt.Sprintf("/v%d", version)}
	loaded[key] = s
	return s, nil
}

// GatewayVersionOf splits a SQL Gateway request path into its API version
// and the rest: /v2/sessions is (2, /sessions). A path without a version
// segment is (0, path).
func GatewayVersionOf(urlPath string) (int, string) {
	p := "/" + strings.TrimLeft(urlPath, "/")
	seg, rest, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	var n int
	if len(seg) >= 2 && seg[0] == 'v' {
		if _, err := fmt.Sscanf(seg[1:], "%d", &n); err == nil && fmt.Sprint(n) == seg[1:] {
			return n, "/" + rest
		}
	}
	return 0, p
}
