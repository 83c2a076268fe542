//! `rindle-room`: the standalone room server.

fn main() {
    eprintln!("rindle-room: under construction");
    std::process::exit(2);
}
