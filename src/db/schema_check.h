// Whether a database's schema is egm's where egm reads it: a results database
// may come from another machine (egm merge, egm serve, every reading verb),
// and its schema is code: a table replaced by a view over an endless recursive
// CTE, a virtual table, or a trigger would run when egm reads or writes it.
#pragma once

#include <string>

#include "db/sqlite.h"

namespace egm::db {

// Checks schema `schema` ("main", or an attached "src") of `connection`, which
// says it is at egm schema version `version`, against the schema egm's own
// migrations build at that version (made once per version in memory):
//  - every table egm has at that version is an ordinary table (not a view, not
//    a virtual table) with each of egm's columns and its declared type (a
//    column more is left alone: egm names the columns it reads);
//  - every view egm has is egm's, SQL text for SQL text;
//  - no trigger at all (egm makes none), and no other view that calls egm's own
//    SQL functions (param_values, param_pack_*): those run only in egm's views.
// Other tables and views egm does not know are left alone: egm never reads them.
// The first difference is a DbError: "LABEL: table sweeps is a view, not
// egm's table ...". `label` names the file in the message.
void check_egm_schema(Connection& connection, const std::string& schema, int version, const std::string& label);

// Every stored value of `connection`'s main schema (checked by
// check_egm_schema at `version`) has its column's declared type: INTEGER
// columns hold integers, REAL columns numbers, TEXT text, BLOB blobs (or NULL
// where the column allows it). SQLite keeps what does not convert as it came
// ('NaN' as TEXT in a REAL column, 1e300 as REAL in an INTEGER one), and egm
// would read it as 0.0 or overflow a cast. The first mismatch is a DbError
// naming the table, the column, the row (its primary key) and what it holds.
void check_egm_values(Connection& connection, int version, const std::string& label);

// Every reference between egm's tables holds (a run's cell exists; a metric's,
// snapshot's or event's run exists and belongs to its cell; a snapshot's
// layout, a look's sweep, a run's merge source exist): an input egm merge
// shifts ids in must not move a row to another cell's run. The first broken
// one is a DbError naming the table, the row and what it names.
void check_egm_references(Connection& connection, int version, const std::string& label);

// Every stored parameter layout parses within its limits (param_pack.h:
// typed segments, counts that neither overflow nor exceed a snapshot's
// maximum), and every snapshot's BLOB holds exactly its layout's values as
// floats or doubles. The first bad one is a DbError naming its row.
void check_egm_layouts(Connection& connection, int version, const std::string& label);

}  // namespace egm::db
