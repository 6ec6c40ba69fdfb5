package flinksim

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// sqlCatalog is a session's tables and views: the in-memory
// default_catalog.default_database every gateway session starts with
// (GenericInMemoryCatalog), and the temporary objects next to it.
type sqlCatalog struct {
	tables map[string]*sqlTable
	views  map[string]*sqlQuery
}

type sqlTable struct {
	name    string
	options map[string]string
}

func newSQLCatalog() *sqlCatalog {
	return &sqlCatalog{tables: map[string]*sqlTable{}, views: map[string]*sqlQuery{}}
}

// objectPath is an identifier resolved against the current catalog and
// database: a bare name is default_catalog.default_database.<name>.
func objectPath(name string) string {
	return strings.TrimPrefix(strings.TrimPrefix(name, "default_catalog."), "default_database.")
}

func qualified(name string) string { return "default_catalog.default_database." + objectPath(name) }

func backquoted(name string) string {
	return "`default_catalog`.`default_database`.`" + objectPath(name) + "`"
}

// create runs CREATE TABLE and CREATE VIEW (TableEnvironmentImpl#
// executeInternal of CreateTableOperation, CreateViewOperation). A view's
// query is validated when it is created.
func (c *sqlCatalog) create(st *sqlStatement) error {
	name := objectPath(st.name.text)
	_, table := c.tables[name]
	_, view := c.views[name]
	if table || view {
		if st.ifNotExists {
			return nil
		}
		if st.temporary {
			return fmt.Errorf("org.apache.flink.table.api.ValidationException: Temporary table '%s' already exists", backquoted(name))
		}
		return fmt.Errorf("org.apache.flink.table.api.ValidationException: Could not execute CreateTable in path %s\nCaused by: org.apache.flink.table.catalog.exceptions.TableAlreadyExistException: Table (or view) default_database.%s already exists in Catalog default_catalog.", backquoted(name), name)
	}
	if st.kind == sqlCreateView {
		if err := c.resolve(st.query, map[string]bool{}); err != nil {
			return err
		}
		c.views[name] = st.query
		return nil
	}
	c.tables[name] = &sqlTable{name: name, options: st.options}
	return nil
}

// resolve checks that every input of a query exists (SqlValidatorImpl:
// "Object 'x' not found").
func (c *sqlCatalog) resolve(q *sqlQuery, seen map[string]bool) error {
	for _, n := range q.from {
		name := objectPath(n.text)
		if _, ok := c.tables[name]; ok {
			continue
		}
		if v, ok := c.views[name]; ok && !seen[name] {
			seen[name] = true
			if err := c.resolve(v, seen); err != nil {
				return err
			}
			continue
		}
		return objectNotFound(n)
	}
	return nil
}

func objectNotFound(n sqlName) error {
	end := n.at.col + len([]rune(n.text)) - 1
	return fmt.Errorf("org.apache.flink.table.api.ValidationException: SQL validation failed. From line %d, column %d to line %d, column %d: Object '%s' not found", n.at.line, n.at.col, n.at.line, end, n.text)
}

// builtinConnectors are the DynamicTableFactory identifiers on the
// official image's classpath (flink-table-api-java-bridge's datagen,
// print and blackhole, the filesystem connector in flink-dist); any other
// connector needs its jar in lib/, which only a derived image has.
var builtinConnectors = []string{"blackhole", "datagen", "filesystem", "print"}

// sourceOnly and sinkOnly are the factories that implement only one of
// DynamicTableSourceFactory and DynamicTableSinkFactory.
var (
	sourceOnly = map[string]bool{"datagen": true}
	sinkOnly   = map[string]bool{"print": true, "blackhole": true}
	// appendOnlySinks accept only INSERT rows
	// (ChangelogMode.insertOnly()): the Kafka and filesystem sinks.
	appendOnlySinks = map[string]bool{"kafka": true, "filesystem": true}
	// statefulSinks snapshot writer state (KafkaWriter's transactions,
	// the filesystem sink's buckets).
	statefulSinks = map[string]bool{"kafka": true, "upsert-kafka": true, "filesystem": true}
)

// sensitiveKeys are GlobalConfiguration#SENSITIVE_KEYS: an option whose
// key contains one is printed as ****** (GlobalConfiguration#isSensitive).
var sensitiveKeys = []string{"password", "secret", "fs.azure.account.key", "apikey", "api-key", "auth-params", "service-key", "token", "basic-auth", "jaas.config", "http-headers"}

// stringifyOptions is FactoryUtil's "Table options are:" list, sorted,
// sensitive values hidden.
func stringifyOptions(opts map[string]string) string {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v := opts[k]
		for _, s := range sensitiveKeys {
			if strings.Contains(strings.ToLower(k), s) {
				v = "******"
			}
		}
		fmt.Fprintf(&b, "'%s'='%s'\n", k, v)
	}
	return b.String()
}

// factory is FactoryUtil#createDynamicTableSource/Sink's discovery: the
// table's 'connector' must name a factory on the classpath that can play
// the part.
func factory(t *sqlTable, sink bool, official bool) (string, error) {
	what, part := "a source for reading", "source"
	if sink {
		what, part = "a sink for writing", "sink"
	}
	wrap := func(cause string) error {
		return fmt.Errorf("org.apache.flink.table.api.ValidationException: Unable to create %s table '%s'.\n\nTable options are:\n\n%s\nCaused by: %s", what, qualified(t.name), stringifyOptions(t.options), cause)
	}
	id, ok := t.options["connector"]
	if !ok {
		return "", wrap("org.apache.flink.table.api.ValidationException: Table options do not contain an option key 'connector' for discovering a connector.")
	}
	if official && !slices.Contains(builtinConnectors, id) {
		return "", wrap(fmt.Sprintf("org.apache.flink.table.api.ValidationException: Could not find any factory for identifier '%s' that implements 'org.apache.flink.table.factories.DynamicTableFactory' in the classpath.\n\nAvailable factory identifiers are:\n\n%s", id, strings.Join(builtinConnectors, "\n")))
	}
	if sink && sourceOnly[id] || !sink && sinkOnly[id] {
		other := "sink"
		if sink {
			other = "source"
		}
		return "", wrap(fmt.Sprintf("org.apache.flink.table.api.ValidationException: Connector '%s' can only be used as a %s. It cannot be used as a %s.", id, other, part))
	}
	return id, nil
}

// sqlOp is one StreamNode of the planned job: a transformation the
// planner translated (ExecNode#translateToPlan).
type sqlOp struct {
	name   string
	inputs []int
	// keyed says its inputs arrive through a hash exchange (a join or an
	// aggregation keys them), which breaks the chain.
	keyed    bool
	stateful bool
}

// sqlPlan is a planned INSERT or statement set: its operators, its job's
// name and what EXPLAIN prints.
type sqlPlan struct {
	ops  []sqlOp
	name string
	// sources and sinks are the scanned and written tables, in order.
	sinks []string
}

// planner plans one INSERT or statement set against a catalog, as the
// Blink planner (PlannerBase#translate) shapes it: a TableSourceScan per
// scanned table, shared by every query that reads it
// (table.optimizer.reuse-source-enabled), a Calc for a projection or a
// filter, a Join or a GroupAggregate behind a hash exchange, a Sink per
// INSERT.
type planner struct {
	cat      *sqlCatalog
	official bool
	plan     *sqlPlan
	sources  map[string]int
}

func (c *sqlCatalog) planInserts(inserts []sqlInsertStmt, official bool) (*sqlPlan, error) {
	pl := &planner{cat: c, official: official, plan: &sqlPlan{}, sources: map[string]int{}}
	var sinks []string
	for _, ins := range inserts {
		name := objectPath(ins.sink.text)
		t, ok := c.tables[name]
		if !ok {
			return nil, objectNotFound(ins.sink)
		}
		if err := c.resolve(ins.query, map[string]bool{}); err != nil {
			return nil, err
		}
		out, updating, producer, err := pl.query(ins.query)
		if err != nil {
			return nil, err
		}
		id, err := factory(t, true, official)
		if err != nil {
			return nil, err
		}
		if updating && appendOnlySinks[id] {
			// FlinkChangelogModeInferenceProgram.
			return nil, fmt.Errorf("org.apache.flink.table.api.TableException: Table sink '%s' doesn't support consuming update changes which is produced by node %s", qualified(name), producer)
		}
		pl.add(sqlOp{name: pl.label("Sink: " + name), inputs: []int{out}, stateful: statefulSinks[id]})
		sinks = append(sinks, qualified(name))
	}
	pl.plan.sinks = sinks
	// TableEnvironmentImpl#executeInternal's default job name.
	pl.plan.name = "insert-into_" + strings.Join(sinks, ",")
	return pl.plan, nil
}

func (pl *planner) add(op sqlOp) int {
	pl.plan.ops = append(pl.plan.ops, op)
	return len(pl.plan.ops) - 1
}

// label is an operator's name as Flink prints it: the transformation and
// its ID in brackets.
func (pl *planner) label(kind string) string {
	return fmt.Sprintf("%s[%d]", kind, len(pl.plan.ops)+1)
}

// query plans a SELECT: its output operator, whether it produces updates,
// and the node that does.
func (pl *planner) query(q *sqlQuery) (int, bool, string, error) {
	var ins []int
	updating, producer := false, ""
	for _, n := range q.from {
		name := objectPath(n.text)
		if v, ok := pl.cat.views[name]; ok {
			out, u, p, err := pl.query(v)
			if err != nil {
				return 0, false, "", err
			}
			ins = append(ins, out)
			if u {
				updating, producer = true, p
			}
			continue
		}
		if i, ok := pl.sources[name]; ok {
			ins = append(ins, i)
			continue
		}
		if _, err := factory(pl.cat.tables[name], false, pl.official); err != nil {
			return 0, false, "", err
		}
		i := pl.add(sqlOp{name: pl.label("Source: " + name), stateful: true})
		pl.sources[name] = i
		ins = append(ins, i)
	}
	out := ins[0]
	for _, right := range ins[1:] {
		// A regular join keeps both sides in state.
		out = pl.add(sqlOp{name: pl.label("Join"), inputs: []int{out, right}, keyed: true, stateful: true})
		if q.outerJoin {
			updating, producer = true, "Join(joinType=[LeftOuterJoin])"
		}
	}
	if q.aggregate {
		if q.filter {
			out = pl.add(sqlOp{name: pl.label("Calc"), inputs: []int{out}})
		}
		kind := "GroupAggregate"
		if q.window {
			kind = "GroupWindowAggregate"
		}
		out = pl.add(sqlOp{name: pl.label(kind), inputs: []int{out}, keyed: true, stateful: true})
		if !q.window {
			// A window emits final rows; an unbounded aggregation updates
			// the rows it emitted.
			updating, producer = true, "GroupAggregate(groupBy=[...], select=[...])"
		}
		return out, updating, producer, nil
	}
	if q.project || q.filter {
		out = pl.add(sqlOp{name: pl.label("Calc"), inputs: []int{out}})
	}
	return out, updating, producer, nil
}

// sqlVertex is a planned JobVertex: its operators' chain and its head's ID.
type sqlVertex struct {
	id, name string
	stateful bool
	inputs   []string
}

// jobVertices chains the plan's operators as StreamingJobGraphGenerator
// does (an operator joins its single input's chain unless the edge is a
// hash exchange) and hashes them as StreamGraphHasherV2 does without
// uids (table.exec.uid.generation PLAN_ONLY, the default from 1.18, and
// no uids at all before): breadth first from the sources, each node's
// hash from its place in the traversal, its number of chainable outputs
// and its inputs' hashes. Names do not count, so renaming a table keeps
// the IDs; adding or removing an operator changes those downstream.
func (p *sqlPlan) jobVertices() []sqlVertex {
	n := len(p.ops)
	outs := make([][]int, n)
	indeg := make([]int, n)
	for i, op := range p.ops {
		for _, in := range op.inputs {
			outs[in] = append(outs[in], i)
		}
		indeg[i] = len(op.inputs)
	}
	chained := func(i int) bool { return len(p.ops[i].inputs) == 1 && !p.ops[i].keyed }
	hash := make([]string, n)
	var order []int
	queue := []int{}
	for i := range p.ops {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		chainable := 0
		for _, o := range outs[i] {
			if chained(o) {
				chainable++
			}
		}
		var ins []string
		for _, in := range p.ops[i].inputs {
			ins = append(ins, hash[in])
		}
		hash[i] = vertexID(fmt.Sprintf("sql:%d:%d:%s", len(order), chainable, strings.Join(ins, ",")))
		order = append(order, i)
		for _, o := range outs[i] {
			indeg[o]--
			if indeg[o] == 0 {
				queue = append(queue, o)
			}
		}
	}
	head := make([]int, n)
	var vs []sqlVertex
	index := map[int]int{}
	for _, i := range order {
		if chained(i) {
			h := head[p.ops[i].inputs[0]]
			head[i] = h
			v := &vs[index[h]]
			v.name += " -> " + p.ops[i].name
			v.stateful = v.stateful || p.ops[i].stateful
			continue
		}
		head[i] = i
		index[i] = len(vs)
		v := sqlVertex{id: hash[i], name: p.ops[i].name, stateful: p.ops[i].stateful}
		for _, in := range p.ops[i].inputs {
			v.inputs = append(v.inputs, hash[head[in]])
		}
		vs = append(vs, v)
	}
	return vs
}

// explain is TableEnvironment#explainSql's text, shortened: the plan's
// operators as the optimized execution plan lists them.
func (p *sqlPlan) explain() string {
	var b strings.Builder
	b.WriteString("== Optimized Execution Plan ==\n")
	for _, v := range p.jobVertices() {
		fmt.Fprintf(&b, "%s\n", v.name)
	}
	return b.String()
}
