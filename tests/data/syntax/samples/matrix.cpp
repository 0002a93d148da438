// A small dense matrix type with operators, in the style of a header-only library.
#include <cstddef>
#include <stdexcept>
#include <vector>

namespace linalg {

constexpr std::size_t kMaxDim = 1024;

template <typename T>
class Matrix {
public:
    Matrix(std::size_t rows, std::size_t cols) : rows_(rows), cols_(cols), data_(rows * cols) {}
    ~Matrix() = default;

    T& operator()(std::size_t r, std::size_t c) { return data_[r * cols_ + c]; }

    std::size_t rows() const noexcept { return rows_; }

    Matrix transpose() const;

private:
    std::size_t rows_, cols_;
    std::vector<T> data_;
};

template <typename T>
Matrix<T> Matrix<T>::transpose() const {
    Matrix<T> out(cols_, rows_);
    for (std::size_t r = 0; r < rows_; ++r)
        for (std::size_t c = 0; c < cols_; ++c)
            out(c, r) = (*this)(r, c);
    return out;
}

struct Shape {
    std::size_t rows;
    std::size_t cols;
};

enum class Order { RowMajor, ColumnMajor };

using Real = double;

inline Shape shape_of(const Matrix<Real>& m) {
    return Shape{m.rows(), m.rows()};
}

}  // namespace linalg

int main() {
    linalg::Matrix<double> m(2, 3);
    return m.rows() == 2 ? 0 : 1;
}
