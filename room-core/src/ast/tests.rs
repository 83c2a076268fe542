use super::*;
use crate::schema::TableSchema;
use alloc::vec;

struct Tables(Vec<TableSchema>);

impl Catalog for Tables {
    fn table(&self, name: &str) -> Option<(usize, &TableSchema)> {
        self.0.iter().enumerate().find(|(_, t)| &*t.name == name)
    }
    fn schema(&self, index: usize) -> Option<&TableSchema> {
        self.0.get(index)
    }
}

fn catalog() -> Tables {
    Tables(vec![
        TableSchema::new(
            "issue",
            &["id", "title", "open", "created", "creatorID"],
            &[0],
        ),
        TableSchema::new("comment", &["id", "issueID", "body"], &[0]),
        TableSchema::new("user", &["id", "name"], &[0]),
    ])
}

fn parse(text: &str) -> Result<Query, Error> {
    Query::parse(text, &catalog())
}

fn refusal(text: &str) -> alloc::string::String {
    let e = parse(text).unwrap_err();
    assert_eq!(
        e.code(),
        crate::ErrorCode::UnsupportedQuery,
        "{}",
        e.message()
    );
    // In the published room's words: a malformed AST, or a query it cannot build.
    assert!(
        e.message().starts_with("ast: not a wire Ast: ")
            || e.message().starts_with("subscribe: Query("),
        "{}",
        e.message()
    );
    alloc::string::String::from(e.message())
}

#[test]
fn completes_order_with_the_primary_key() {
    let q = parse(r#"{"table":"issue","orderBy":[["created","desc"]]}"#).unwrap();
    assert_eq!(q.order, vec![(3, true), (0, false)]);
    let q = parse(r#"{"table":"issue"}"#).unwrap();
    assert_eq!(q.order, vec![(0, false)]);
    let q = parse(r#"{"table":"issue","orderBy":[["id","desc"],["created","asc"]]}"#).unwrap();
    assert_eq!(q.order, vec![(0, true), (3, false)]);
}

#[test]
fn refuses_what_rooms_do_not_serve() {
    assert!(refusal(r#"{"table":"issue","aggregate":"count"}"#).contains("aggregate"));
    assert!(refusal(r#"{"table":"issue","groupBy":["open"]}"#).contains("groupBy"));
    assert!(refusal(r#"{"table":"nope"}"#).contains("\"nope\""));
    assert!(refusal(r#"{"table":"issue","orderBy":[["nope","asc"]]}"#).contains("\"nope\""));
    let static_operand = r#"{"table":"issue","where":{"type":"simple","op":"=","left":{"type":"column","name":"id"},"right":{"type":"static","anchor":"authData","field":"sub"}}}"#;
    assert!(refusal(static_operand).contains("static"));
    let rhs_column = r#"{"table":"issue","where":{"type":"simple","op":"=","left":{"type":"column","name":"id"},"right":{"type":"column","name":"title"}}}"#;
    assert!(refusal(rhs_column).contains("right-hand side"));
    let exists_start = r#"{"table":"issue","where":{"type":"correlatedSubquery","op":"EXISTS","related":{"correlation":{"parentField":["id"],"childField":["issueID"]},"subquery":{"table":"comment","alias":"c","start":{"row":{"id":1},"exclusive":false}}}}}"#;
    assert!(refusal(exists_start).contains("start"));
    let exists_related = r#"{"table":"issue","where":{"type":"correlatedSubquery","op":"EXISTS","related":{"correlation":{"parentField":["id"],"childField":["issueID"]},"subquery":{"table":"comment","alias":"c","related":[{"correlation":{"parentField":["id"],"childField":["id"]},"subquery":{"table":"user","alias":"u"}}]}}}}"#;
    assert!(refusal(exists_related).contains("related"));
    let flipped_not = r#"{"table":"issue","where":{"type":"correlatedSubquery","op":"NOT EXISTS","flip":true,"related":{"correlation":{"parentField":["id"],"childField":["issueID"]},"subquery":{"table":"comment","alias":"c"}}}}"#;
    assert!(refusal(flipped_not).contains("flip"));
    let scalar = r#"{"table":"issue","where":{"type":"correlatedSubquery","op":"EXISTS","scalar":true,"related":{"correlation":{"parentField":["id"],"childField":["issueID"]},"subquery":{"table":"comment","alias":"c"}}}}"#;
    assert!(refusal(scalar).contains("scalar"));
    let bad_corr = r#"{"table":"issue","related":[{"correlation":{"parentField":["id"],"childField":["nope"]},"subquery":{"table":"comment","alias":"c"}}]}"#;
    assert!(refusal(bad_corr).contains("\"nope\""));
    assert!(refusal("not json").contains("at line 1"));
    assert!(refusal(r#"{"table":"issue","limit":-1}"#).contains("limit"));
    assert!(refusal(r#"{"table":"issue","limit":1.5}"#).contains("limit"));
}

#[test]
fn ignores_unknown_keys_and_presentation() {
    let q = parse(r#"{"table":"issue","one":true,"select":["id"],"whatever":{"x":1},"limit":3}"#)
        .unwrap();
    assert_eq!(q.limit, Some(3));
    let q = parse(r#"{"table":"issue","one":true}"#).unwrap();
    assert_eq!(q.limit, None);
}

#[test]
fn related_aliases_last_wins_and_an_exists_limit_of_zero_joins_nothing() {
    let q = parse(
        r#"{"table":"issue","related":[
            {"correlation":{"parentField":["id"],"childField":["issueID"]},"subquery":{"table":"comment","alias":"c","limit":1}},
            {"correlation":{"parentField":["id"],"childField":["issueID"]},"subquery":{"table":"comment","alias":"c","limit":2}}]}"#,
    )
    .unwrap();
    assert_eq!(q.related.len(), 1);
    assert_eq!(q.related[0].query.limit, Some(2));
    let q = parse(
        r#"{"table":"issue","where":{"type":"correlatedSubquery","op":"EXISTS","related":{"correlation":{"parentField":["id"],"childField":["issueID"]},"subquery":{"table":"comment","alias":"c","limit":0}}}}"#,
    )
    .unwrap();
    // No row can witness it: EXISTS never holds (NOT EXISTS always would).
    assert!(
        matches!(q.filter, Some(Cond::Const(false))),
        "{:?}",
        q.filter
    );
    let q = parse(
        r#"{"table":"issue","where":{"type":"correlatedSubquery","op":"EXISTS","related":{"correlation":{"parentField":["id"],"childField":["issueID"]},"subquery":{"table":"comment","alias":"c","limit":5}}}}"#,
    )
    .unwrap();
    match q.filter {
        Some(Cond::Exists(e)) => assert_eq!(e.query.limit, None),
        other => panic!("{other:?}"),
    }
}

#[test]
fn literal_left_folds_and_nesting_splices() {
    let q = parse(
        r#"{"table":"issue","where":{"type":"and","conditions":[
            {"type":"simple","op":"=","left":{"type":"literal","value":1},"right":{"type":"literal","value":1}},
            {"type":"and","conditions":[{"type":"simple","op":"=","left":{"type":"column","name":"open"},"right":{"type":"literal","value":true}}]}]}}"#,
    )
    .unwrap();
    match q.filter {
        Some(Cond::And(items)) => {
            assert!(matches!(items[0], Cond::Const(true)));
            assert!(matches!(items[1], Cond::Simple { col: 2, .. }));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn start_bounds_fill_unnamed_columns_with_null() {
    let q = parse(r#"{"table":"issue","start":{"row":{"created":5},"exclusive":true}}"#).unwrap();
    let b = q.start.unwrap();
    assert!(b.exclusive);
    assert_eq!(b.row[3], Value::num(5.0));
    assert_eq!(b.row[0], Value::Null);
    assert!(parse(r#"{"table":"issue","start":{"row":{"created":5}}}"#).is_err());
}

#[test]
fn depth_is_bounded() {
    let mut ast = alloc::string::String::from(r#"{"table":"issue"}"#);
    for _ in 0..(MAX_DEPTH + 2) {
        ast = alloc::format!(
            r#"{{"table":"issue","related":[{{"correlation":{{"parentField":["id"],"childField":["id"]}},"subquery":{}}}]}}"#,
            ast.replacen("{\"table\"", "{\"alias\":\"x\",\"table\"", 1)
        );
    }
    let e = parse(&ast).unwrap_err();
    assert!(
        e.message().starts_with("ast: not a wire Ast: "),
        "{}",
        e.message()
    );
}

#[test]
fn subqueries_are_counted_at_every_depth_and_bounded() {
    let related = |n: usize| {
        let one = r#"{"correlation":{"parentField":["id"],"childField":["id"]},"subquery":{"alias":"x","table":"issue"}}"#;
        alloc::format!(
            r#"{{"table":"issue","related":[{}]}}"#,
            alloc::vec![one; n].join(",")
        )
    };
    let exists = |n: usize| {
        let one = r#"{"type":"correlatedSubquery","op":"EXISTS","related":{"correlation":{"parentField":["id"],"childField":["id"]},"subquery":{"alias":"x","table":"issue"}}}"#;
        alloc::format!(
            r#"{{"table":"issue","where":{{"type":"or","conditions":[{}]}}}}"#,
            alloc::vec![one; n].join(",")
        )
    };
    for ast in [related(MAX_SUBQUERIES), exists(MAX_SUBQUERIES)] {
        assert!(parse(&ast).is_ok());
    }
    for ast in [related(MAX_SUBQUERIES + 1), exists(MAX_SUBQUERIES + 1)] {
        let e = parse(&ast).unwrap_err();
        assert_eq!(
            e.message(),
            "ast: not a wire Ast: a query holds more than 128 subqueries (related and EXISTS levels together)"
        );
    }
    // Nested levels count too: 30 levels, each with four more children beside the
    // next (1 + 30 × 5 = 151 levels), pass the depth bound and not the count.
    let corr = r#""correlation":{"parentField":["id"],"childField":["id"]}"#;
    let leaf = alloc::format!(r#"{{{corr},"subquery":{{"alias":"y","table":"issue"}}}}"#);
    let mut ast = alloc::string::String::from(r#"{"alias":"x","table":"issue"}"#);
    for _ in 0..30 {
        ast = alloc::format!(
            r#"{{"alias":"x","table":"issue","related":[{{{corr},"subquery":{ast}}},{leaf},{leaf},{leaf},{leaf}]}}"#
        );
    }
    let ast = ast.replacen(r#"{"alias":"x","table""#, r#"{"table""#, 1);
    let e = parse(&ast).unwrap_err();
    assert!(
        e.message().contains("more than 128 subqueries"),
        "{}",
        e.message()
    );
}

#[test]
fn an_exists_limited_to_no_rows_is_checked_for_shape_only() {
    let exists = |subquery: &str| {
        alloc::format!(
            r#"{{"table":"issue","where":{{"type":"correlatedSubquery","op":"NOT EXISTS","related":{{"correlation":{{"parentField":["id"],"childField":["issueID"]}},"subquery":{subquery}}}}}}}"#
        )
    };
    // What it means is never built: a mismatched literal comparison, an unknown column
    // (in its condition or its correlation) — as the published room does.
    for subquery in [
        r#"{"table":"comment","limit":0,"where":{"type":"simple","op":">","left":{"type":"literal","value":3},"right":{"type":"literal","value":"x"}}}"#,
        r#"{"table":"comment","limit":0,"where":{"type":"simple","op":"=","left":{"type":"column","name":"nope"},"right":{"type":"literal","value":1}}}"#,
    ] {
        let q = parse(&exists(subquery)).unwrap();
        assert!(
            matches!(q.filter, Some(Cond::Const(true))),
            "{:?}",
            q.filter
        );
    }
    let bad_link = r#"{"table":"issue","where":{"type":"correlatedSubquery","op":"EXISTS","related":{"correlation":{"parentField":["id"],"childField":["nope"]},"subquery":{"table":"comment","limit":0}}}}"#;
    assert!(matches!(
        parse(bad_link).unwrap().filter,
        Some(Cond::Const(false))
    ));
    // Its table and its shape still are.
    assert!(refusal(&exists(r#"{"table":"nope","limit":0}"#)).contains("UnknownTable"));
    assert!(refusal(&exists(
        r#"{"table":"comment","limit":0,"where":{"type":"nonsense"}}"#
    ))
    .contains("not a wire Ast"));
    // Limited to some rows, the same condition is refused.
    assert!(refusal(&exists(
        r#"{"table":"comment","limit":1,"where":{"type":"simple","op":">","left":{"type":"literal","value":3},"right":{"type":"literal","value":"x"}}}"#
    ))
    .contains("mismatched literal types"));
}
