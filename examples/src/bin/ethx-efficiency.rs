//! Prints the ETH-X efficiency table: useful bytes over wire bytes for AXI loads and stores in
//! each framing, header bytes only / full wire cost (see `xlink_examples::ethx_efficiency`).
//!
//! Usage: `cargo run --release -p xlink-examples --bin ethx-efficiency`.

fn main() {
    println!("Useful bytes / wire bytes, request and response together: header bytes only / full wire cost");
    println!("(preamble 8, IFG 12, FCS 4, 64 B minimum frame). PAXI widths: 8-bit ID, 64-bit address,");
    println!("512-bit data, 16-bit USER. Row (c): random addresses, IDs cycling through 16 values.\n");
    print!("{}", xlink_examples::ethx_efficiency::table());
}
