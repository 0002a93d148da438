//! Geometric shapes with areas, a trait object registry and a small parser.
use std::collections::HashMap;
use std::fmt;

pub const MAX_SIDES: usize = 12;
static GREETING: &str = "shapes";

/// Anything with an area.
pub trait Shape: fmt::Debug {
    fn area(&self) -> f64;
    fn name(&self) -> &str {
        "shape"
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Circle {
    pub radius: f64,
}

#[derive(Debug)]
pub enum Polygon {
    Triangle { base: f64, height: f64 },
    Square(f64),
}

pub type Registry = HashMap<String, Box<dyn Shape>>;

impl Circle {
    /// A circle of the given radius.
    pub fn new(radius: f64) -> Self {
        Circle { radius }
    }
}

impl Shape for Circle {
    fn area(&self) -> f64 {
        std::f64::consts::PI * self.radius * self.radius
    }
}

impl Shape for Polygon {
    fn area(&self) -> f64 {
        match self {
            Polygon::Triangle { base, height } => 0.5 * base * height,
            Polygon::Square(side) => side * side,
        }
    }

    fn name(&self) -> &str {
        "polygon"
    }
}

pub mod parse {
    use super::*;

    pub fn circle(text: &str) -> Result<Circle, std::num::ParseFloatError> {
        Ok(Circle::new(text.trim().parse()?))
    }
}

macro_rules! square {
    ($side:expr) => {
        Polygon::Square($side)
    };
}

pub fn total_area<'a, I>(shapes: I) -> f64
where
    I: IntoIterator<Item = &'a dyn Shape>,
{
    shapes.into_iter().map(|s| s.area()).sum()
}
